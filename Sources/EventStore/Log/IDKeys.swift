import LMDB

/// The `ids` table's keys. A lowercase UUID (`8-4-4-4-12` hex digits: the ids `RandomID` makes,
/// and the ones imports derive) is stored as its 16 bytes after a 0x00, 17 bytes instead of 36;
/// no id has a NUL, so no id's UTF-8 is such a key. Any other id is its UTF-8. A v7 UUID's bytes
/// sort as its text did, so new ids still land at the table's right edge.
///
/// Only in a store without a key: an encrypted store's `ids` keys are digests of the id's UTF-8
/// already (with its time order in front; ``EventIDOrder``).
enum IDKeys {
    static let compactLength = 17

    /// `id`'s key in a store without a key (``IDKeys``), built on the stack, for `body`.
    static func withKey<T>(_ id: String, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        var id = id
        return try id.withUTF8 { utf8 in
            try withUnsafeTemporaryAllocation(byteCount: compactLength, alignment: 1) { out in
                compact(UnsafeRawBufferPointer(utf8), into: out) ? try body(UnsafeRawBufferPointer(out)) : try body(UnsafeRawBufferPointer(utf8))
            }
        }
    }

    /// Writes the compact key of `utf8` into `out` (17 bytes) when it is a lowercase UUID.
    static func compact(_ utf8: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard utf8.count == 36, utf8[8] == 0x2D, utf8[13] == 0x2D, utf8[18] == 0x2D, utf8[23] == 0x2D else { return false }
        out[0] = 0
        var n = 1
        var high: UInt8?
        for (i, c) in utf8.enumerated() where i != 8 && i != 13 && i != 18 && i != 23 {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: return false
            }
            if let h = high {
                out[n] = h << 4 | v
                n += 1
                high = nil
            } else {
                high = v
            }
        }
        return true
    }

    /// Rewrites the UUID ids of a store older than format 6 with their compact keys, as it opens.
    static func compactAll(_ ids: Database, _ txn: Transaction) throws {
        var moved: [(old: [UInt8], key: [UInt8], value: [UInt8])] = []
        let c = try txn.cursor(ids)
        var entry = try c.first()
        var key = [UInt8](repeating: 0, count: compactLength)
        while let e = entry {
            if key.withUnsafeMutableBytes({ compact(e.key, into: $0) }) { moved.append(([UInt8](e.key), key, [UInt8](e.value))) }
            entry = try c.next()
        }
        for m in moved {
            _ = try txn.delete(ids, key: m.old)
            _ = try txn.put(ids, key: m.key, value: m.value)
        }
    }
}

extension LogSchema {
    /// `id`'s key in `ids`: compact in a store without a key (``IDKeys``), else its UTF-8 (which
    /// the table digests).
    func withIDKey<T>(_ id: String, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        if cipher == nil { return try IDKeys.withKey(id, body) }
        var id = id
        return try id.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }
}
