import Foundation

/// ``KeyedDocumentProjection``'s open rows of `history`, held in memory while a batch or chunk
/// folds instead of written (``DocumentFold/held``), by key (`collection 0x00 key`).
///
/// A key's new version closes its row: the row is packed into `history-packed` from here, and its
/// pointer, like the key's newest (open) row, is written once, when the fold ends, in key order.
/// So a version of a key the fold has seen costs no search of `history` (a tree of every version
/// ever stored) and no put there; in a 1 M-event rebuild those were a third of the writer's time.
/// A read of a key inside the fold finds its open row here (``KeyedDocumentProjection``'s
/// `withVersionRecord`), and writes the key's rows out first when it asks for an earlier version.
///
/// Looked up by the key's bytes where they lie (a hash of them, then a comparison): no array is
/// made for a lookup.
final class HeldRows {
    /// A key's open row (its first version's seq and its bytes), and the rows of the key that
    /// closed in this fold: their seqs and their numbers in `history-packed`.
    final class Row {
        let key: [UInt8]
        var seq: UInt64
        var bytes: [UInt8]
        var closed: [(seq: UInt64, number: UInt64)] = []
        /// Another key with the same hash.
        fileprivate var next: Row?

        init(key: [UInt8], seq: UInt64, bytes: [UInt8]) {
            self.key = key
            self.seq = seq
            self.bytes = bytes
        }
    }

    private var buckets: [Int: Row] = [:]
    private(set) var count = 0
    /// About the memory held; past ``limit`` the fold writes its rows out.
    var bytes = 0
    static let limit = 64 << 20

    var isEmpty: Bool { count == 0 }

    /// The row held for `key`, if any.
    func row(_ key: UnsafeRawBufferPointer) -> Row? {
        var candidate = buckets[Self.hash(key)]
        while let row = candidate {
            if row.key.equals(key) { return row }
            candidate = row.next
        }
        return nil
    }

    /// Holds `row`, whose key has none held.
    func insert(_ row: Row) {
        let h = row.key.withUnsafeBytes { Self.hash($0) }
        row.next = buckets[h]
        buckets[h] = row
        count += 1
        bytes += row.key.count + row.bytes.count + 64
    }

    /// Stops holding `row`.
    func remove(_ row: Row) {
        let h = row.key.withUnsafeBytes { Self.hash($0) }
        if buckets[h] === row {
            buckets[h] = row.next
        } else {
            var before = buckets[h]
            while let b = before, b.next !== row { before = b.next }
            before?.next = row.next
        }
        row.next = nil
        count -= 1
        bytes = max(0, bytes - (row.key.count + row.bytes.count + 64))
    }

    /// Every row held, in key order (as LMDB orders keys), holding none after.
    func takeSorted() -> [Row] {
        var all: [Row] = []
        all.reserveCapacity(count)
        for (_, first) in buckets {
            var candidate: Row? = first
            while let row = candidate {
                all.append(row)
                candidate = row.next
                row.next = nil
            }
        }
        buckets.removeAll()
        count = 0
        bytes = 0
        all.sort { Self.less($0.key, $1.key) }
        return all
    }

    private static func hash(_ key: UnsafeRawBufferPointer) -> Int {
        var h = Hasher()
        h.combine(bytes: key)
        return h.finalize()
    }

    /// LMDB's default order: by the bytes, a prefix first.
    private static func less(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let n = min(a.count, b.count)
        let c = n == 0 ? 0 : a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, n) } }
        return c != 0 ? c < 0 : a.count < b.count
    }
}
