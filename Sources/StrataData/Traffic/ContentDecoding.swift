import CBrotli
import CZstd
import Foundation

/// A recorded body's `Content-Encoding` undone, to read the body (its redaction). Every decoder
/// stops at `limit` bytes, so a small body that would inflate to gigabytes is refused, not held.
package enum ContentDecoding {
    package enum Failure: Error, Equatable {
        /// An encoding there is no decoder for (`compress`, a made-up one).
        case unsupported(String)
        /// The bytes are not a whole stream of that encoding.
        case corrupt(String)
        /// It decodes to more than the limit.
        case tooLarge
    }

    /// The encodings of `headers`' `Content-Encoding` lines in the order they were applied
    /// (`identity` and empty ones left out), lowercased.
    package static func encodings(_ headers: [HeaderLine]) -> [String] {
        headers.filter { $0.name.lowercased() == "content-encoding" }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    /// `body` decoded through `encodings`, the last applied undone first.
    package static func decode(_ body: [UInt8], encodings: [String], limit: Int) throws(Failure) -> [UInt8] {
        var bytes = body
        for encoding in encodings.reversed() {
            switch encoding {
            case "gzip", "x-gzip", "deflate": bytes = try gunzip(bytes, limit: limit)
            case "br": bytes = try brotli(bytes, limit: limit)
            case "zstd": bytes = try zstd(bytes, limit: limit)
            default: throw .unsupported(encoding)
            }
        }
        return bytes
    }

    /// gzip, or zlib-wrapped deflate (zlib tells them apart by their header).
    package static func gunzip(_ body: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        let inflater = GzipInflater()
        var out: [UInt8] = []
        var offset = 0
        // Fed in small chunks so that the limit is checked before a bomb has gone off.
        while offset < body.count {
            let end = min(body.count, offset + 16 << 10)
            do {
                try body.withUnsafeBytes { try inflater.inflate(UnsafeRawBufferPointer(rebasing: $0[offset..<end]), into: &out) }
            } catch {
                throw .corrupt("gzip: \(error)")
            }
            if out.count > limit { throw .tooLarge }
            offset = end
        }
        guard inflater.atMemberEnd else { throw .corrupt("gzip: the stream ends early") }
        return out
    }

    package static func brotli(_ body: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        if let problem = cbrotli_load() { throw .unsupported("br (\(String(cString: problem)))") }
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        let rc = body.withUnsafeBufferPointer { cbrotli_decode($0.baseAddress, $0.count, limit, &output, &size) }
        defer { free(output) }
        switch rc {
        case 0: return output.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        case 2: throw .tooLarge
        default: throw .corrupt("br: not a whole brotli stream")
        }
    }

    package static func zstd(_ body: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        guard let stream = ZSTD_createDStream() else { throw .corrupt("zstd: no decoder") }
        defer { ZSTD_freeDStream(stream) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var pending = 0
        let failure: Failure? = body.withUnsafeBytes { input in
            var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
            while true {
                let (produced, hint) = chunk.withUnsafeMutableBytes { o in
                    var sink = ZSTD_outBuffer(dst: o.baseAddress, size: o.count, pos: 0)
                    let hint = ZSTD_decompressStream(stream, &sink, &source)
                    return (sink.pos, hint)
                }
                if ZSTD_isError(hint) != 0 { return .corrupt("zstd: \(String(cString: ZSTD_getErrorName(hint)))") }
                out.append(contentsOf: chunk[0..<produced])
                if out.count > limit { return .tooLarge }
                pending = hint
                // Done when the input is used up and the decoder holds nothing back.
                if source.pos == source.size && produced < chunk.count { return nil }
            }
        }
        if let failure { throw failure }
        // A hint above zero means a frame is not finished.
        guard pending == 0 else { throw .corrupt("zstd: the stream ends early") }
        return out
    }
}
