import CZlib
import Crypto
import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// WARC in and out: what Debian's wget writes while crawling the fixture server is imported and
/// replayed byte for byte; Strata's export is read back by a reader written here from the WARC
/// 1.1 specification (ISO 28500:2017), member by gzip member.
@Suite struct WARCCLITests {
    static let paths = [
        "/cars/offers?page=1&size=10", "/cars/offers?page=2&size=10", "/cars/offers/3", "/cars/offers/7", "/cars/images/3.png", "/pokedex/pokemon/1"
    ]

    @Test func aWgetCrawlIsImportedAndReplayedByteForByte() async throws {
        try await withFixtureServer { fixture in
            let dir = TestScratch.path("wget")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try (Self.paths.map { fixture.baseURL + $0 }.joined(separator: "\n") + "\n").write(toFile: dir + "/urls", atomically: true, encoding: .utf8)
            #expect(try await run("wget", ["-q", "-i", "urls", "--warc-file=crawl", "-O", "/dev/null"], in: dir) == 0)
            var direct: [String: [UInt8]] = [:]
            for p in Self.paths { direct[p] = try await curl([fixture.baseURL + p]) }
            fixture.version = 3  // the API moves on: the replay must not reach it
            let store = makeStoreDir()
            let imported = try await strata(["import", "site", "--warc", dir + "/crawl.warc.gz"], store: store)
            #expect(
                imported.status == 0 && imported.stdout.contains("\(Self.paths.count) exchanges imported from WARC"), "\(imported.stdout) \(imported.stderr)")
            // wget's own records (its manifest, arguments and log) are skipped, not errors.
            #expect(imported.stdout.contains("1 metadata") && imported.stdout.contains("2 resource"), "\(imported.stdout)")
            let again = try await strata(["import", "site", "--warc", dir + "/crawl.warc.gz"], store: store)
            #expect(again.stdout.contains("0 exchanges imported"), "\(again.stdout)")
            try await Self.expectReplay(store, direct)
            // The same crawl plain, and gzipped whole rather than per record.
            #expect(try await run("sh", ["-c", "gzip -dc crawl.warc.gz > plain.warc && gzip -c plain.warc > whole.warc.gz"], in: dir) == 0)
            for file in ["plain.warc", "whole.warc.gz"] {
                let other = makeStoreDir()
                let r = try await strata(["import", "site", "--warc", dir + "/" + file], store: other)
                #expect(r.status == 0 && r.stdout.contains("\(Self.paths.count) exchanges imported"), "\(file): \(r.stdout) \(r.stderr)")
                try await Self.expectReplay(other, direct)
            }
            // A file that is not WARC, or cut short, is refused with the reason.
            try "not a warc\r\n".write(toFile: dir + "/bad.warc", atomically: true, encoding: .utf8)
            let bad = try await strata(["import", "x", "--warc", dir + "/bad.warc"], store: store)
            #expect(bad.status == 64 && bad.stderr.contains("not a valid WARC"), "\(bad.stderr)")
            let whole = try #require(FileManager.default.contents(atPath: dir + "/plain.warc"))
            try whole.prefix(whole.count - 300).write(to: URL(fileURLWithPath: dir + "/cut.warc"))
            let cut = try await strata(["import", "y", "--warc", dir + "/cut.warc"], store: store)
            #expect(cut.status == 64 && cut.stderr.contains("cut short"), "\(cut.stderr)")
        }
    }

    /// Revisit records as deduplicating crawlers write them: the payload is the earlier response's
    /// with the same `WARC-Payload-Digest`.
    @Test func aRevisitGetsThePayloadItRefersTo() async throws {
        let body = Array(#"{"id": 3, "price": 11900}"#.utf8)
        func record(_ fields: [(String, String)], _ block: [UInt8]) -> [UInt8] {
            var head = "WARC/1.1\r\n"
            for (k, v) in fields { head += "\(k): \(v)\r\n" }
            return Array((head + "Content-Length: \(block.count)\r\n\r\n").utf8) + block + Array("\r\n\r\n".utf8)
        }
        let url = "http://api.example.com/cars/offers/3"
        let response = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        var file = record(
            [("WARC-Type", "warcinfo"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000001>"), ("WARC-Date", "2026-01-01T00:00:00Z")], [])
        file += record(
            [
                ("WARC-Type", "response"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000002>"), ("WARC-Date", "2026-01-01T09:00:00Z"),
                ("WARC-Target-URI", url), ("WARC-Payload-Digest", SpecWARC.digest(body)), ("Content-Type", "application/http;msgtype=response")
            ], response)
        file += record(
            [
                ("WARC-Type", "revisit"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000003>"), ("WARC-Date", "2026-01-02T09:00:00Z"),
                ("WARC-Target-URI", url), ("WARC-Payload-Digest", SpecWARC.digest(body)),
                ("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"), ("WARC-Refers-To-Target-URI", url)
            ], Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n".utf8))
        file += record(
            [
                ("WARC-Type", "revisit"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000004>"), ("WARC-Date", "2026-01-02T09:00:01Z"),
                ("WARC-Target-URI", "http://api.example.com/cars/offers/9"), ("WARC-Payload-Digest", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
                ("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
            ], Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n".utf8))
        let path = TestScratch.path("revisit") + ".warc"
        try Data(file).write(to: URL(fileURLWithPath: path))
        let store = makeStoreDir()
        let r = try await strata(["import", "crawl", "--warc", path], store: store)
        #expect(r.status == 0 && r.stdout.contains("3 exchanges imported") && r.stdout.contains("1 revisits without their original"), "\(r.stdout) \(r.stderr)")
        let events = try await logEvents(store, type: "ExchangeRecorded")
        #expect(events.count == 3)
        let served = try await Listening.start(["serve", "--port", "0"], store: store)
        // A date in the path names the logged time (these were logged now), so the first is named by its seq.
        let firstSeq = try #require(events.first?["seq"] as? Int)
        let first = try await RawHTTP.request(served.base, "/@\(firstSeq)/cars/offers/3")
        #expect(first.header("Memento-Datetime") == "Thu, 01 Jan 2026 09:00:00 GMT", "observed when the crawler saw it")
        let revisit = try await RawHTTP.request(served.base, "/cars/offers/3")
        #expect(first.status == 200 && first.body == body)
        #expect(revisit.status == 200 && revisit.body == body && revisit.seq != first.seq, "the revisit is its own recording with the same payload")
        #expect(try await served.stop().status == 0)
    }

    static func expectReplay(_ store: String, _ direct: [String: [UInt8]]) async throws {
        let served = try await Listening.start(["serve", "--port", "0"], store: store)
        for (path, body) in direct {
            let r = try await RawHTTP.request(served.base, path)
            #expect(r.status == 200 && r.body == body, "\(path) replayed: \(r.status) \(r.body.count) bytes, \(body.count) expected")
        }
        #expect(try await served.stop().status == 0)
    }

    @Test func theExportIsAWARCTheSpecReadsAndReplaysAsFetched() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            #expect(
                try await strata(
                    [
                        "source", "add", "cars", "--url", fixture.baseURL + "/cars/offers", "--items", "results", "--page-param", "page",
                        "--page-size", "10", "--image", "image", "--detail-url", fixture.baseURL + "/cars/offers/{id}"
                    ], store: store
                ).status == 0)
            var heads: [Int] = []
            for v in 1...2 {
                fixture.version = v
                #expect(try await strata(["fetch", "cars", "--details", "--images"], store: store).status == 0)
                heads.append(try await headSeq(store))
            }
            let file = TestScratch.path("export") + ".warc.gz"
            let out = try await strata(["export", "cars", "--warc", file, "--as-of", String(heads[0])], store: store)
            #expect(out.status == 0, "\(out.stderr)")
            let bytes = try #require(FileManager.default.contents(atPath: file))
            let members = try SpecWARC.gzipMembers([UInt8](bytes))
            let records = try members.map { try SpecWARC.record($0) }
            #expect(members.count == records.count, "one gzip member per record")
            #expect(records.first?.fields["WARC-Type"] == "warcinfo")
            var responses = 0
            var lastResponseID: String?
            for r in records.dropFirst() {
                #expect(r.version == "WARC/1.1")
                for name in ["WARC-Record-ID", "WARC-Date", "WARC-Target-URI", "Content-Type", "WARC-Block-Digest"] {
                    #expect(r.fields[name] != nil, "\(name) in \(r.fields)")
                }
                #expect(r.fields["WARC-Block-Digest"] == SpecWARC.digest(r.block))
                switch r.fields["WARC-Type"] {
                case "response":
                    responses += 1
                    lastResponseID = r.fields["WARC-Record-ID"]
                    let payload = try #require(SpecWARC.httpPayload(r.block))
                    #expect(r.fields["WARC-Payload-Digest"] == SpecWARC.digest(payload), "\(r.fields["WARC-Target-URI"] ?? "")")
                    #expect(r.block.starts(with: Array("HTTP/1.1 200 OK\r\n".utf8)))
                case "request":
                    #expect(r.fields["WARC-Concurrent-To"] == lastResponseID, "a request follows its response")
                    #expect(r.block.starts(with: Array("GET /cars/".utf8)))
                case "revisit":
                    #expect(r.fields["WARC-Profile"] != nil)
                default:
                    Issue.record("unexpected record \(r.fields["WARC-Type"] ?? "?")")
                }
            }
            // The first pass only: 3 pages, 24 details, 24 images.
            #expect(responses == 51, "\(responses) responses")
            // Imported into a new store, the export replays as the first pass was fetched.
            let other = makeStoreDir()
            #expect(try await strata(["import", "copy", "--warc", file], store: other).status == 0)
            let a = try await Listening.start(["serve", "--port", "0", "--as-of", String(heads[0])], store: store)
            let b = try await Listening.start(["serve", "--port", "0"], store: other)
            for path in ["/cars/offers?page=1&size=10", "/cars/offers?page=3&size=10", "/cars/offers/3", "/cars/images/3.png"] {
                let x = try await RawHTTP.request(a.base, path), y = try await RawHTTP.request(b.base, path)
                #expect(x.status == 200 && x.body == y.body && x.header("Content-Type") == y.header("Content-Type"), "\(path)")
            }
            #expect(try await a.stop().status == 0)
            #expect(try await b.stop().status == 0)
            let missing = try await strata(["export", "nope", "--warc", file], store: store)
            #expect(missing.status == 3, "\(missing.stderr)")
        }
    }
}

/// WARC 1.1 read as the specification words it, independent of Strata's reader.
enum SpecWARC {
    struct Record {
        var version: String
        var fields: [String: String]
        var block: [UInt8]
    }

    /// Each gzip member of a file, inflated on its own (RFC 1952: members are concatenated).
    static func gzipMembers(_ bytes: [UInt8]) throws -> [[UInt8]] {
        var members: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            var s = z_stream()
            guard inflateInit2_(&s, 31, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw RawHTTPError(description: "zlib") }
            defer { inflateEnd(&s) }
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var input = Array(bytes[offset...])
            var rc: Int32 = Z_OK
            let consumed: Int = input.withUnsafeMutableBufferPointer { inp in
                s.next_in = inp.baseAddress
                s.avail_in = UInt32(inp.count)
                repeat {
                    let n = chunk.withUnsafeMutableBufferPointer { o -> Int in
                        s.next_out = o.baseAddress
                        s.avail_out = UInt32(o.count)
                        rc = inflate(&s, Z_NO_FLUSH)
                        return o.count - Int(s.avail_out)
                    }
                    out += chunk[0..<n]
                } while rc == Z_OK
                return inp.count - Int(s.avail_in)
            }
            guard rc == Z_STREAM_END else { throw RawHTTPError(description: "a gzip member does not end (\(rc))") }
            members.append(out)
            offset += consumed
        }
        return members
    }

    /// `version CRLF *(field CRLF) CRLF block CRLF CRLF` (WARC 1.1 §4).
    static func record(_ m: [UInt8]) throws -> Record {
        guard let end = Data(m).range(of: Data("\r\n\r\n".utf8))?.lowerBound else { throw RawHTTPError(description: "no header end") }
        let head = String(decoding: m[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError(description: "bad field \(line)") }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard let length = fields["Content-Length"].flatMap(Int.init) else { throw RawHTTPError(description: "no Content-Length") }
        let start = end + 4
        guard m.count == start + length + 4, Array(m[(start + length)...]) == Array("\r\n\r\n".utf8) else {
            throw RawHTTPError(description: "the block is not Content-Length bytes followed by CRLF CRLF")
        }
        return Record(version: head[0], fields: fields, block: Array(m[start..<start + length]))
    }

    /// The entity body of an `application/http` response block.
    static func httpPayload(_ block: [UInt8]) -> [UInt8]? {
        guard let end = Data(block).range(of: Data("\r\n\r\n".utf8))?.upperBound else { return nil }
        return Array(block[end...])
    }

    /// `sha1:` + RFC 4648 base32 of the SHA-1.
    static func digest(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var bits = "" as String
        for b in Insecure.SHA1.hash(data: bytes) { bits += String(repeating: "0", count: 8 - String(b, radix: 2).count) + String(b, radix: 2) }
        var out = ""
        var i = bits.startIndex
        while i < bits.endIndex {
            let j = bits.index(i, offsetBy: 5, limitedBy: bits.endIndex) ?? bits.endIndex
            var group = String(bits[i..<j])
            group += String(repeating: "0", count: 5 - group.count)
            out.append(alphabet[Int(group, radix: 2)!])
            i = j
        }
        return "sha1:" + out
    }
}
