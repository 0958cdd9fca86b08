import Synchronization
import CZstd
import LMDB

/// How payload bodies are stored in the `blobs` database, keyed by SHA-256 of the raw bytes.
///
/// Value layout: `u8 codec | varint rawSize | bytes`, where codec 0 stores the body as it is and
/// codec 2 stores `8-byte seal | zstd frame`, the seal being the first 8 bytes of SHA-256 over the
/// frame. A body is compressed with zstd (level 3) when it is at least 128 bytes and compression
/// saves at least 10%.
///
/// Why the seal: a zstd frame has bits a decoder ignores (the header's unused bit, slack in
/// entropy tables), so a flipped bit there decodes to the same body and the content hash alone
/// cannot see it. The seal makes every change of the stored bytes detectable by `verify`.
/// Codec 1 (zstd without a seal, written by earlier versions) is still read.
enum BlobCodec {
    static let raw: UInt8 = 0
    static let zstd: UInt8 = 1
    static let sealedZstd: UInt8 = 2
    /// A `blobs` row that points to the `bodies` row (by seq) holding the stored body.
    static let pointer: UInt8 = 3
    static let sealSize = 8
    static let compressionThreshold = 128
    static let level: Int32 = 3

    static func hash(_ bytes: [UInt8]) -> [UInt8] { Hashing.sha256(bytes) }

    /// Encodes a body for storage, compressing with `context` (reused: creating a zstd context
    /// per body costs more than compressing a small one).
    static func encode(_ body: [UInt8], context: ZstdContext) -> [UInt8] {
        if body.count >= compressionThreshold {
            let bound = ZSTD_compressBound(body.count)
            // Room for the header and the frame's bound from the start: the frame is written in
            // place, and the array is allocated once.
            var w = ByteWriter(capacity: 1 + 10 + sealSize + bound)
            // Header (codec + size varint + seal room) first, then compress straight into the tail.
            w.u8(sealedZstd)
            w.varint(body.count)
            let sealAt = w.bytes.count
            let header = sealAt + sealSize
            w.bytes.append(contentsOf: repeatElement(0, count: sealSize + bound))
            let n = w.bytes.withUnsafeMutableBytes { o in
                body.withUnsafeBytes { i in
                    ZSTD_compressCCtx(context.cctx, o.baseAddress! + header, bound, i.baseAddress, i.count, level)
                }
            }
            if ZSTD_isError(n) == 0, n * 10 <= body.count * 9 {
                w.bytes.removeLast(bound - n)
                w.bytes.withUnsafeMutableBytes { b in
                    Hashing.sha256(UnsafeRawBufferPointer(rebasing: b[header...]), into: UnsafeMutableRawBufferPointer(rebasing: b[sealAt..<header]))
                }
                return w.bytes
            }
        }
        var w = ByteWriter(capacity: body.count + 12)
        w.u8(raw)
        w.varint(body.count)
        w.raw(body)
        return w.bytes
    }

    /// The `blobs` row for a body stored in `bodies` under `seq`, built on the stack for `body`.
    static func withPointer<T>(to seq: UInt64, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(byteCount: 9, alignment: 1) { row in
            row[0] = pointer
            row.storeBytes(of: seq.bigEndian, toByteOffset: 1, as: UInt64.self)
            return try body(UnsafeRawBufferPointer(row))
        }
    }

    /// The seq a `blobs` row points to, or nil for a row holding the body itself (format 1).
    static func pointee(_ row: UnsafeRawBufferPointer) throws -> UInt64? {
        guard row.first == pointer else { return nil }
        guard row.count == 9 else { throw ByteReader.Truncated() }
        return UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: row[1...]))
    }

    /// The stored body (codec, size, bytes) of the `blobs` row under `hash`, following a pointer
    /// to `bodies`; nil when there is no such row or the pointer leads nowhere.
    static func stored(hash: UnsafeRawBufferPointer, blobs: Database, bodies: Database, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        guard let row = try txn.get(blobs, key: hash) else { return nil }
        guard let seq = try pointee(row) else { return row }
        return try stored(seq: seq, bodies: bodies, in: txn)
    }

    /// The stored body in `bodies` under `seq`: the body the event at `seq` carried first; nil
    /// when that event stored none.
    static func stored(seq: UInt64, bodies: Database, in txn: Transaction) throws -> UnsafeRawBufferPointer? {
        try seq.bigEndianBytes.withUnsafeBytes { try txn.get(bodies, key: $0) }
    }

    /// Decodes a stored value back to the body. Throws on an unknown codec, a size mismatch, a
    /// zstd error or (with `checkSeal`, as `verify` does) a seal that does not match the frame.
    static func decode(_ stored: UnsafeRawBufferPointer, context: ZstdContext? = nil, checkSeal: Bool = false) throws -> [UInt8] {
        var r = ByteReader(stored)
        let codec = try r.u8()
        let size = Int(try r.varint())
        guard size <= 1 << 34 else { throw ByteReader.Truncated() }
        var rest = try r.slice(r.remaining)
        switch codec {
        case raw:
            guard rest.count == size else { throw ByteReader.Truncated() }
            return [UInt8](rest)
        case zstd, sealedZstd:
            if codec == sealedZstd {
                guard rest.count > sealSize else { throw ByteReader.Truncated() }
                let seal = UnsafeRawBufferPointer(rebasing: rest[..<sealSize])
                rest = UnsafeRawBufferPointer(rebasing: rest[sealSize...])
                if checkSeal, !Hashing.sha256(rest, prefix: sealSize).elementsEqual(seal) { throw ByteReader.Truncated() }
            }
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
final class ZstdContext: @unchecked Sendable {
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

    /// Runs `body` with a context from a process-wide pool, for reads on any thread (creating a
    /// context per read costs more than decompressing a small body).
    static func pooled<T>(_ body: (ZstdContext) throws -> T) rethrows -> T {
        let context = pool.withLock { $0.popLast() } ?? ZstdContext()
        defer { pool.withLock { if $0.count < 16 { $0.append(context) } } }
        return try body(context)
    }

    private static let pool = Mutex<[ZstdContext]>([])
}
