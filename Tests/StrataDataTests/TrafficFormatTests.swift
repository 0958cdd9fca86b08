import EventStore
import Foundation
import StrataData
import Testing

/// The pure parts of the traffic formats: exact times, digests, HTTP messages, gzip members.
@Suite struct TrafficFormatTests {
    @Test func timesGoInAndComeOutToTheMicrosecond() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let t = Timestamp(microseconds: Int64.random(in: -2_000_000_000_000_000...4_000_000_000_000_000, using: &rng))
            #expect(ExactTime.parse(ExactTime.format(t)) == t, "\(ExactTime.format(t))")
        }
        #expect(ExactTime.parse("2026-11-28T07:04:11.319822+00:00")?.microseconds == 1_795_849_451_319_822)
        #expect(ExactTime.parse("2026-11-28T08:04:11.5+01:00") == ExactTime.parse("2026-11-28T07:04:11.500Z"))
        #expect(ExactTime.format(Timestamp(microseconds: 1_795_849_451_319_000)) == "2026-11-28T07:04:11.319Z")
        #expect(ExactTime.formatSeconds(Timestamp(microseconds: 1_795_849_451_999_999)) == "2026-11-28T07:04:11Z")
        for bad in ["", "2026-11-28", "2026-11-28T07:04:11", "2026-13-01T00:00:00Z", "2026-11-28T07:04:11.Z", "2026-11-28T07:04:11Zjunk"] {
            #expect(ExactTime.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func payloadDigestsAreBase32SHA1AsWARCToolsWriteThem() {
        // wget's digest of `{"a":1}\n` (from a crawl of a file with those 8 bytes).
        #expect(WARCWriter.digest(Array("{\"a\":1}\n".utf8)) == "sha1:RI6ZMH375DXXWQOUMECZRBFJIYN6QUCZ")
        #expect(WARCWriter.digest([]) == "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
    }

    @Test func httpMessagesAreTakenApartAndChunkedBodiesJoined() throws {
        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n4\r\nWiki\r\n6;x=y\r\npedia \r\n0\r\n\r\n".utf8)
        let m = try #require(HTTPMessage.parse(chunked))
        #expect(m.startLine == "HTTP/1.1 200 OK" && m.body == Array("Wikipedia ".utf8))
        #expect(m.headers == [HeaderLine("Content-Type", "text/plain")])
        let noBody = try #require(HTTPMessage.parse(Array("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n".utf8)))
        #expect(noBody.body.isEmpty && noBody.headers.count == 1)
        #expect(HTTPMessage.parse([]) == nil)
    }

    @Test func gzipMembersInflateOneAfterAnotherWhateverTheChunking() throws {
        let parts = (0..<5).map { i in Array(String(repeating: "record \(i) ", count: 100 * (i + 1)).utf8) }
        let file = parts.flatMap { Gzip.member($0) }
        for chunk in [1, 7, 512, file.count] {
            let inflater = GzipInflater()
            var out: [UInt8] = []
            var i = 0
            while i < file.count {
                let end = min(i + chunk, file.count)
                try Array(file[i..<end]).withUnsafeBytes { try inflater.inflate($0, into: &out) }
                i = end
            }
            #expect(out == parts.flatMap { $0 } && inflater.atMemberEnd, "chunks of \(chunk)")
        }
        let inflater = GzipInflater()
        var out: [UInt8] = []
        #expect(throws: GzipInflater.Failure.self) {
            try [0x1f, 0x8b, 0x08, 0, 0xff, 0xff, 0xff, 0xff, 0, 3, 0xde, 0xad].withUnsafeBytes { try inflater.inflate($0, into: &out) }
        }
    }

    @Test func requestKeysSeparateMethodsAndBodies() {
        #expect(RequestKey.make(method: "GET", target: "/a?b=1", body: nil) == "/a?b=1")
        #expect(RequestKey.make(method: "get", target: "/a", body: []) == "/a")
        #expect(RequestKey.make(method: "DELETE", target: "/a", body: nil) == "DELETE /a")
        let a = RequestKey.make(method: "POST", target: "/a", body: Array("x".utf8)), b = RequestKey.make(method: "POST", target: "/a", body: Array("y".utf8))
        #expect(a != b && a.hasPrefix("POST /a sha256:") && a.count == "POST /a sha256:".count + 16)
    }
}

extension TrafficFormatTests {
    @Test func headerListsGoThroughTheirJSONUnchanged() throws {
        let lines = [
            HeaderLine("Content-Type", "application/json"), HeaderLine("X-Quote", #"a "b" \c"#), HeaderLine("X-Ctl", "tab\there\u{1}"),
            HeaderLine("X-Unicode", "naïve 🚗"), HeaderLine("Empty", "")
        ]
        let text = TrafficEvents.encode(lines)
        #expect(TrafficEvents.decode(text) == lines)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]])
        #expect(parsed.map { HeaderLine($0[0], $0[1]) } == lines, "valid JSON any parser reads")
        // What JSONSerialization wrote before (escaped slashes, \u escapes) reads the same.
        let foreign = String(decoding: try JSONSerialization.data(withJSONObject: lines.map { [$0.name, $0.value] }), as: UTF8.self)
        #expect(TrafficEvents.decode(foreign) == lines)
        #expect(TrafficEvents.decode("[]").isEmpty && TrafficEvents.decode("not json").isEmpty)
    }
}
