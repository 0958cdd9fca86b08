import CZstd
import Crypto

/// How payload bodies are stored in the `blobs` database, keyed by SHA-256 of the raw bytes.
///
/// Value layout: `u8 codec (0 raw, 1 zstd) | varint rawSize | bytes`. A body is compressed with
/// zstd (level 3) when it is at least 128 bytes and compression saves at least 10%.
enum BlobCodec {
    static let raw: UInt8 = 0
    static let zstd: UInt8 = 1
    static let compressionThreshold = 128
    static let level: Int32 = 3

    static func hash(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// Encodes a body for storage, compressing with `context` (reused: creating a zstd context
    /// per body costs more than compressing a small one).
    static func encode(_ body: [UInt8], context: ZstdContext) -> [UInt8] {
        var w = ByteWriter(capacity: body.count + 12)
        if body.count >= compressionThreshold {
            let bound = ZSTD_compressBound(body.count)
            // Header (codec + size varint) first, then compress straight into the tail.
            w.u8(zstd)
            w.varint(body.count)
            let header = w.bytes.count
            w.bytes.append(contentsOf: repeatElement(0, count: bound))
            let n = w.bytes.withUnsafeMutableBytes { o in
                body.withUnsafeBytes { i in
                    ZSTD_compressCCtx(context.cctx, o.baseAddress! + header, bound, i.baseAddress, i.count, level)
                }
            }
            if ZSTD_isError(n) == 0, n * 10 <= body.count * 9 {
                w.bytes.removeLast(bound - n)
                return w.bytes
            }
            w = ByteWriter(capacity: body.count + 12)
        }
        w.u8(raw)
        w.varint(body.count)
        w.raw(body)
        return w.bytes
    }

    /// Decodes a stored value back to the body. Throws on an unknown codec, a size mismatch or a
    /// zstd error (a damaged blob).
    static func decode(_ stored: UnsafeRawBufferPointer, context: ZstdContext? = nil) throws -> [UInt8] {
        var r = ByteReader(stored)
        let codec = try r.u8()
        let size = Int(try r.varint())
        guard size <= 1 << 34 else { throw ByteReader.Truncated() }
        let rest = try r.slice(r.remaining)
        switch codec {
        case raw:
            guard rest.count == size else { throw ByteReader.Truncated() }
            return [UInt8](rest)
        case zstd:
            var out = [UInt8](repeating: 0, count: size)
            let n = out.withUnsafeMutableBytes { o in
                if let context {
                    ZSTD_decompressDCtx(context.dctx, o.baseAddress, size, rest.baseAddress, rest.count)
                } else {
                    ZSTD_decompress(o.baseAddress, size, rest.baseAddress, rest.count)
                }
            }
            guard ZSTD_isError(n) == 0, n == size else { throw ByteReader.Truncated() }
            return out
        default:
            throw ByteReader.Truncated()
        }
    }
}

/// Reusable zstd compression and decompression contexts. Not thread-safe: one per writer or per
/// read batch.
final class ZstdContext {
    let cctx: OpaquePointer
    let dctx: OpaquePointer

    init() {
        cctx = ZSTD_createCCtx()
        dctx = ZSTD_createDCtx()
    }

    deinit {
        ZSTD_freeCCtx(cctx)
        ZSTD_freeDCtx(dctx)
    }
}
