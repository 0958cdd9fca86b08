import EventStore
import StrataData
import Testing

/// The placeholder: 12 hex digits of an HMAC over the path and the value, under the store's key.
@Suite struct RedactorTests {
    @Test func equalValuesAreEqualAndAnythingElseDiffers() {
        let key = [UInt8](repeating: 1, count: 32)
        let r = Redactor(key: key, paths: ["email"])
        let a = r.placeholder(path: "email", value: .string("ann@example.com"))
        #expect(a.count == 23 && a.hasPrefix("[redacted:") && a.hasSuffix("]"))
        #expect(a.dropFirst(10).dropLast().allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(a == r.placeholder(path: "email", value: .string("ann@example.com")))
        #expect(a != r.placeholder(path: "email", value: .string("bob@example.com")), "a change shows as a change")
        #expect(a != r.placeholder(path: "contact.email", value: .string("ann@example.com")), "the path is part of it")
        #expect(a != Redactor(key: [UInt8](repeating: 2, count: 32), paths: ["email"]).placeholder(path: "email", value: .string("ann@example.com")))
        // A number and the string of its digits are different values.
        #expect(r.placeholder(path: "n", value: .number("5")) != r.placeholder(path: "n", value: .string("5")))
        #expect(CredentialMask.isPlaceholder(a))
    }

    @Test func aBodyThatCannotBeReadIsRefusedNotStored() {
        let r = Redactor(key: [UInt8](repeating: 1, count: 32), paths: ["email"])
        #expect(throws: FetchError.self) { _ = try r.list(Array("<html>".utf8), items: "results", url: "http://x") }
        // A recorded body that is not JSON (an image, HTML) is kept as it came.
        #expect(r.recorded(Array("<html>".utf8), headers: []).body == Array("<html>".utf8))
        let json = Array(#"{"email":"a@b.c"}"#.utf8)
        #expect(r.recorded(json, headers: [HeaderLine("Content-Encoding", "gzip")]).body == json, "what does not inflate is kept as it came")
        #expect(r.recorded(json, headers: []).body != json)
    }

    /// A gzip or deflate body is inflated to be read: a path found there leaves no compressed copy
    /// of the value; the body is stored redacted and plain, and its headers say so. A body no
    /// path reaches stays compressed, byte for byte, with its headers.
    @Test func aCompressedRecordedBodyIsReadForThePaths() throws {
        let r = Redactor(key: [UInt8](repeating: 1, count: 32), paths: ["owner.email"])
        let secret = "ann.secret-\(UInt64.random(in: 0...UInt64.max))@example.com"
        let plain = Array(#"{"id":7,"owner":{"email":"\#(secret)","name":"Ann"}}"#.utf8)
        let headers = [HeaderLine("Content-Type", "application/json"), HeaderLine("Content-Encoding", "gzip"), HeaderLine("Content-Length", "99")]
        for (encoding, body) in [("gzip", Gzip.member(plain)), ("deflate", Self.zlib(plain))] {
            var h = headers
            h[1].value = encoding
            let out = r.recorded(body, headers: h)
            let text = String(decoding: out.body, as: UTF8.self)
            #expect(!text.contains(secret) && text.contains("[redacted:") && text.contains(#""name":"Ann""#), "\(encoding): \(text)")
            #expect(!out.headers.contains { $0.name.lowercased() == "content-encoding" })
            #expect(out.headers.first { $0.name == "Content-Length" }?.value == String(out.body.count))
            #expect(out.headers.first { $0.name == "Content-Type" }?.value == "application/json")
        }
        let other = Gzip.member(Array(#"{"id":8,"owner":{"name":"Bob"}}"#.utf8))
        let kept = r.recorded(other, headers: headers)
        #expect(kept.body == other && kept.headers == headers, "no path in it: kept compressed")
        let compress = r.recorded(Gzip.member(plain), headers: [HeaderLine("Content-Encoding", "compress")])
        #expect(compress.body == Gzip.member(plain), "an encoding it cannot read is kept as it came")
    }

    /// `bytes` as a zlib stream (HTTP's `deflate`).
    static func zlib(_ bytes: [UInt8]) -> [UInt8] {
        // A zlib stream: header 0x78 0x01, stored (uncompressed) deflate blocks, Adler-32.
        var out: [UInt8] = [0x78, 0x01]
        var rest = bytes[...]
        repeat {
            let block = rest.prefix(65_535)
            rest = rest.dropFirst(block.count)
            out.append(rest.isEmpty ? 1 : 0)
            let n = UInt16(block.count)
            out += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8(~n >> 8)]
            out += block
        } while !rest.isEmpty
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes { a = (a + UInt32(byte)) % 65_521; b = (b + a) % 65_521 }
        let adler = b << 16 | a
        out += [UInt8(adler >> 24), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
        return out
    }
}
