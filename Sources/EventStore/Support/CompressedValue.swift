import CZstd

/// A value a projection keeps compressed when that makes it smaller: written rarely, read now
/// and then (the schema's shapes: a sorted list of paths and types, 0.9 KB each on the fires
/// history, 2.3× smaller at level 19).
///
/// `0x01 | varint size | zstd frame` (level 19, magicless, without a content size), or `0x00 |
/// the bytes` when compressing does not pay.
package enum CompressedValue {
    static let level: Int32 = 19
    static let damaged = EventStoreError.corrupted("a compressed projection value is damaged; rebuild the projection (`strata rebuild`)")

    package static func encode(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 64, let framed = framed(bytes, mark: 1, level: level, keeping: { $0 + 4 < bytes.count }) else { return [0] + bytes }
        return framed
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

    /// The bytes `stored` holds; throws ``EventStoreError`` when it is damaged.
    package static func decode(_ stored: UnsafeRawBufferPointer) throws -> [UInt8] {
        let h = try header(stored)
        let rest = UnsafeRawBufferPointer(rebasing: stored[h.offset...])
        guard h.compressed else { return [UInt8](rest) }
        do {
            return try ZstdContext.pooled { try $0.decompress(rest, prefix: [], size: h.size) }
        } catch is ByteReader.Truncated {
            throw damaged
        }
    }

    /// Whether `stored` is compressed, how many bytes it holds, and where they (or their frame)
    /// start.
    private static func header(_ stored: UnsafeRawBufferPointer) throws -> (compressed: Bool, size: Int, offset: Int) {
        var r = ByteReader(stored)
        do {
            switch try r.u8() {
            case 0:
                return (false, stored.count - 1, 1)
            case 1:
                let size = try r.varint()
                guard size <= 64 << 20 else { throw ByteReader.Truncated() }
                return (true, Int(size), r.offset)
            default:
                throw ByteReader.Truncated()
            }
        } catch is ByteReader.Truncated {
            throw damaged
        }
    }
}
