import CZstd

/// A value a projection keeps compressed when that makes it smaller: written rarely, read now
/// and then (the schema's shapes: a sorted list of paths and types, 0.9 KB each on the fires
/// history, 2.3× smaller at level 19).
///
/// `0x01 | varint size | zstd frame` (level 19, magicless, without a content size), or `0x00 |
/// the bytes` when compressing does not pay; or, for values much alike (shapes), `0x02 | varint
/// n, n bytes: the anchor's name | varint size | zstd frame` compressed with another value, the
/// *anchor*, as its prefix (``encode(_:against:)``). An anchor is itself of form 0 or 1, so a
/// read decodes at most two values.
package enum CompressedValue {
    static let level: Int32 = 19
    static let damaged = EventStoreError.corrupted("a compressed projection value is damaged; rebuild the projection (`strata rebuild`)")

    package static func encode(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 64, let framed = framed(bytes, mark: 1, level: level, keeping: { $0 + 4 < bytes.count }) else { return [0] + bytes }
        return framed
    }

    /// `bytes` compressed with `anchor.bytes` as the frame's prefix when that is smaller than
    /// ``encode(_:)``'s form (the fires history's 197 shapes, about 900 bytes each: 380 bytes
    /// compressed alone, 50 against one of them); `anchor.name` is what ``decode(_:anchor:)``
    /// is given back to find it.
    package static func encode(_ bytes: [UInt8], against anchor: (name: [UInt8], bytes: [UInt8])) -> [UInt8] {
        let alone = encode(bytes)
        guard let frame = ZstdContext.pooled({ $0.compress(bytes, prefix: anchor.bytes, level: level) }) else { return alone }
        var w = ByteWriter(capacity: frame.count + anchor.name.count + 12)
        w.u8(2)
        w.varint(anchor.name.count)
        w.raw(anchor.name)
        w.varint(bytes.count)
        w.raw(frame)
        return w.bytes.count < alone.count ? w.bytes : alone
    }

    /// `mark | varint bytes.count | frame`: `bytes` as one zstd frame at `level` (magicless, no
    /// content size), the form a compressed value, a waiting history row and a change-order row
    /// share; nil when zstd fails or `keeping` refuses the frame's size.
    static func framed(_ bytes: [UInt8], mark: UInt8, level: Int32, keeping: (Int) -> Bool = { _ in true }) -> [UInt8]? {
        guard let frame = ZstdContext.pooled({ $0.compress(bytes, prefix: [], level: level) }), keeping(frame.count) else { return nil }
        var w = ByteWriter(capacity: frame.count + 11)
        w.u8(mark)
        w.varint(bytes.count)
        w.raw(frame)
        return w.bytes
    }

    /// How many bytes `stored` holds, from its header alone (nothing is decompressed); throws
    /// ``EventStoreError`` when it is damaged.
    package static func size(_ stored: UnsafeRawBufferPointer) throws -> Int { try header(stored).size }

    /// The bytes `stored` holds; throws ``EventStoreError`` when it is damaged or is compressed
    /// against an anchor.
    package static func decode(_ stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        try decode(stored, anchor: { _ in throw damaged })
    }

    /// The bytes `stored` holds, `anchor` giving the stored anchor a value of form 2 names (a
    /// value of form 0 or 1); throws ``EventStoreError`` when either is damaged, and what
    /// `anchor` throws.
    package static func decode(_ stored: UnsafeRawBufferPointer, anchor: ([UInt8]) throws -> [UInt8]?) throws -> [UInt8] {
        let h = try header(stored)
        let rest = UnsafeRawBufferPointer(rebasing: stored[h.offset...])
        var prefix: [UInt8] = []
        if let name = h.anchor {
            guard let anchored = try anchor(name) else { throw damaged }
            // One level only: an anchor that names an anchor is damage, not a chain to follow.
            prefix = try anchored.withUnsafeBytes { try decode($0) }
        } else if !h.compressed {
            return [UInt8](rest)
        }
        do {
            return try ZstdContext.pooled { try $0.decompress(rest, prefix: prefix, size: h.size) }
        } catch is ByteReader.Truncated {
            throw damaged
        }
    }

    /// Whether `stored` is compressed, how many bytes it holds, where they (or their frame)
    /// start, and the anchor it is compressed against.
    private static func header(_ stored: UnsafeRawBufferPointer) throws -> (compressed: Bool, size: Int, offset: Int, anchor: [UInt8]?) {
        var r = ByteReader(stored)
        do {
            let mark = try r.u8()
            switch mark {
            case 0:
                return (false, stored.count - 1, 1, nil)
            case 1, 2:
                var anchor: [UInt8]?
                if mark == 2 {
                    let n = try r.varint()
                    guard n <= 256 else { throw ByteReader.Truncated() }
                    anchor = try r.bytes(Int(n))
                }
                let size = try r.varint()
                guard size <= 64 << 20 else { throw ByteReader.Truncated() }
                return (true, Int(size), r.offset, anchor)
            default:
                throw ByteReader.Truncated()
            }
        } catch is ByteReader.Truncated {
            throw damaged
        }
    }
}
