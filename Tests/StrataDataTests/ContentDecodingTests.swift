import CZstd
import Foundation
import StrataData
import Testing

/// Recorded bodies in every `Content-Encoding` a server sends (gzip, deflate, br, zstd, and
/// chains of them) decoded with a limit, and redacted through it. The br and zstd streams are made
/// by the real encoders (libbrotlienc, which libcurl's libbrotli1 ships, and libzstd).
@Suite struct ContentDecodingTests {
    static let plain = Array((0..<400).map { #"{"id":\#($0),"text":"a few words that repeat, \#($0 % 7)"}"# }.joined(separator: ",").utf8)

    @Test func everyEncodingAndChainDecodes() throws {
        let encoded: [(String, [UInt8])] = [
            ("gzip", Gzip.member(Self.plain)), ("x-gzip", Gzip.member(Self.plain)), ("deflate", RedactorTests.zlib(Self.plain)),
            ("br", try Self.brotli(Self.plain)), ("zstd", Self.zstd(Self.plain)),
            // Applied left to right, so undone right to left.
            ("gzip, br", try Self.brotli(Gzip.member(Self.plain))), ("zstd, gzip", Gzip.member(Self.zstd(Self.plain)))
        ]
        for (encoding, body) in encoded {
            let encodings = ContentDecoding.encodings([HeaderLine("Content-Encoding", encoding)])
            #expect(try ContentDecoding.decode(body, encodings: encodings, limit: 1 << 20) == Self.plain, "\(encoding)")
        }
        // Two header lines are one list; identity is no encoding.
        let lines = [HeaderLine("Content-Encoding", "gzip"), HeaderLine("content-encoding", " BR "), HeaderLine("Content-Encoding", "identity")]
        #expect(ContentDecoding.encodings(lines) == ["gzip", "br"])
        #expect(try ContentDecoding.decode(Self.brotli(Gzip.member(Self.plain)), encodings: ContentDecoding.encodings(lines), limit: 1 << 20) == Self.plain)
    }

    @Test func aBodyOverTheLimitIsRefusedInEveryEncoding() throws {
        let limit = Self.plain.count - 1
        for (encoding, body) in [("gzip", Gzip.member(Self.plain)), ("br", try Self.brotli(Self.plain)), ("zstd", Self.zstd(Self.plain))] {
            #expect(throws: ContentDecoding.Failure.tooLarge, "\(encoding)") { try ContentDecoding.decode(body, encodings: [encoding], limit: limit) }
            #expect(try ContentDecoding.decode(body, encodings: [encoding], limit: Self.plain.count) == Self.plain, "exactly the limit is fine")
        }
    }

    @Test func aCutOrForeignStreamIsCorruptAndAnUnknownEncodingUnsupported() throws {
        for (encoding, body) in [("gzip", Gzip.member(Self.plain)), ("br", try Self.brotli(Self.plain)), ("zstd", Self.zstd(Self.plain))] {
            let cut = Array(body.prefix(body.count / 2))
            #expect(Self.failure { try ContentDecoding.decode(cut, encodings: [encoding], limit: 1 << 20) }?.isCorrupt == true, "\(encoding) cut")
            #expect(Self.failure { try ContentDecoding.decode(Self.plain, encodings: [encoding], limit: 1 << 20) }?.isCorrupt == true, "\(encoding) plain")
        }
        #expect(throws: ContentDecoding.Failure.unsupported("compress")) { try ContentDecoding.decode(Self.plain, encodings: ["compress"], limit: 1 << 20) }
    }

    /// A path found in a br, zstd or chained body is redacted there, and the body is stored
    /// decoded, with headers to match; a decompression bomb is not decoded past the limit but
    /// kept as it came, as anything unreadable is.
    @Test func redactionReadsThroughEveryEncoding() throws {
        let r = Redactor(key: [UInt8](repeating: 1, count: 32), paths: ["owner.email"])
        let secret = "ann.secret-\(UInt64.random(in: 0...UInt64.max))@example.com"
        let plain = Array(#"{"id":7,"owner":{"email":"\#(secret)","name":"Ann"}}"#.utf8)
        for (encoding, body) in [("br", try Self.brotli(plain)), ("zstd", Self.zstd(plain)), ("gzip, br", try Self.brotli(Gzip.member(plain)))] {
            let out = r.recorded(body, headers: [HeaderLine("Content-Encoding", encoding), HeaderLine("Content-Length", String(body.count))])
            let text = String(decoding: out.body, as: UTF8.self)
            #expect(!text.contains(secret) && text.contains("[redacted:") && text.contains(#""name":"Ann""#), "\(encoding): \(text)")
            #expect(out.headers == [HeaderLine("Content-Length", String(out.body.count))], "\(encoding)")
        }
        // 80 MiB of a JSON string that zstd makes a few kilobytes of.
        var bomb = Array(#"{"owner":{"email":""#.utf8)
        bomb += [UInt8](repeating: UInt8(ascii: "a"), count: 80 << 20)
        bomb += Array(#""}}"#.utf8)
        let small = Self.zstd(bomb)
        #expect(small.count < 1 << 20)
        let kept = r.recorded(small, headers: [HeaderLine("Content-Encoding", "zstd")])
        #expect(kept.body == small && kept.headers == [HeaderLine("Content-Encoding", "zstd")], "over the limit: kept as it came")
    }

    static func failure(_ body: () throws -> [UInt8]) -> ContentDecoding.Failure? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? ContentDecoding.Failure
        }
    }

    static func zstd(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let n = out.withUnsafeMutableBytes { o in bytes.withUnsafeBytes { ZSTD_compress(o.baseAddress, o.count, $0.baseAddress, $0.count, 3) } }
        precondition(ZSTD_isError(n) == 0)
        return Array(out.prefix(n))
    }

    struct NoBrotliEncoder: Error {}

    /// `bytes` through libbrotlienc's one-shot encoder, opened the way the decoder is.
    static func brotli(_ bytes: [UInt8]) throws -> [UInt8] {
        typealias Compress = @convention(c) (Int32, Int32, Int32, Int, UnsafePointer<UInt8>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UInt8>?) -> Int32
        guard let library = dlopen("libbrotlienc.so.1", RTLD_NOW), let symbol = dlsym(library, "BrotliEncoderCompress") else { throw NoBrotliEncoder() }
        let compress = unsafeBitCast(symbol, to: Compress.self)
        var out = [UInt8](repeating: 0, count: bytes.count + 1024)
        var size = out.count
        let ok = out.withUnsafeMutableBufferPointer { o in
            bytes.withUnsafeBufferPointer { compress(5, 22, 0, $0.count, $0.baseAddress, &size, o.baseAddress) }
        }
        guard ok == 1 else { throw NoBrotliEncoder() }
        return Array(out.prefix(size))
    }
}

extension ContentDecoding.Failure {
    var isCorrupt: Bool {
        if case .corrupt = self { return true }
        return false
    }
}
