import EventStore
import LMDB

/// The `schema` projection's view of each source's current items: which shape each has, so a
/// changed or gone item takes its old shape out of the field counts, and how many there were at
/// any seq. Rows, not keyed documents: nothing reads an item's past shapes, and as documents
/// (with a current record, an order entry and a history of versions each) they were most of
/// the projection, 6–7 MB of a real scraping history of 22,922 short-lived items whose
/// item history itself is 6 MB.
///
/// `items`: key `SOURCE 0x00 ID` (the texts as ``TableSet/text(_:)`` has them: digests in an
/// encrypted store), value `16 bytes: the digest of the item's canonical JSON | 16 bytes: its
/// shape's reference (the `shapes` key's digest) | varint the seq it was last seen at`. A row
/// is deleted when its item is swept, so the table holds the present items only.
///
/// `item-counts`: ``CountBlocks`` of `SOURCE 0x00` (since schema 15; before, a row per change,
/// key `SOURCE 0x00 seq(u64be)`), each change `varint` how many items the source had
/// after that event; written by every event that changes it, so a count as of any seq is one
/// seek.
package enum SchemaItemRows {
    package static let table = "items"
    package static let counts = "item-counts"

    struct Row {
        var digest: [UInt8]
        var shape: [UInt8]
        var lastSeen: UInt64

        init(digest: [UInt8], shape: [UInt8], lastSeen: UInt64) {
            self.digest = digest
            self.shape = shape
            self.lastSeen = lastSeen
        }

        init(_ raw: UnsafeRawBufferPointer) throws {
            var r = ByteReader(raw)
            digest = [UInt8](try r.slice(16))
            shape = [UInt8](try r.slice(16))
            lastSeen = try r.varint()
            guard r.isAtEnd else { throw DocumentError("a schema item row has bytes after its fields") }
        }

        var bytes: [UInt8] {
            var w = ByteWriter(capacity: 42)
            w.raw(digest)
            w.raw(shape)
            w.varint(lastSeen)
            return w.bytes
        }
    }

    static func prefix(_ source: String, _ tables: TableSet) -> [UInt8] { tables.text(source) + [0] }

    static func key(_ source: String, _ id: String, _ tables: TableSet) -> [UInt8] { prefix(source, tables) + tables.text(id) }

    /// The row of `key`, the cursor left on it (or where it goes) for ``put(_:_:at:found:)``:
    /// one descent for the read and the write of every item of every page.
    static func row(_ key: [UInt8], at cursor: Cursor) throws -> Row? {
        try key.withUnsafeBytes { k in try cursor.seek(exactly: k).map { try Row($0) } }
    }

    /// Writes `row` under `key` where ``row(_:at:)`` left the cursor: in place when it found one.
    static func put(_ key: [UInt8], _ row: Row, at cursor: Cursor, found: Bool) throws {
        try key.withUnsafeBytes { k in try row.bytes.withUnsafeBytes { try cursor.put(key: k, value: $0, flags: found ? .current : []) } }
    }

    /// The rows of `source`'s items last seen before seq `since`, with their keys.
    static func unseen(source: String, since: UInt64, _ txn: Transaction, _ tables: TableSet) throws -> [(key: [UInt8], row: Row)] {
        let p = prefix(source, tables)
        let c = try txn.cursor(tables[table])
        var out: [(key: [UInt8], row: Row)] = []
        var entry = try c.seek(atLeast: p)
        while let e = entry, e.key.starts(with: p) {
            let row = try Row(e.value)
            if row.lastSeen < since { out.append(([UInt8](e.key), row)) }
            entry = try c.next()
        }
        return out
    }

    /// How many items `source` had after the event at `seq` (now when nil).
    static func count(source: String, asOf seq: UInt64?, _ txn: Transaction, _ tables: TableSet) throws -> Int {
        try CountBlocks.values(prefix(source, tables), asOf: seq ?? .max, width: 1, try txn.cursor(tables[counts])).map { Int(clamping: $0[0]) } ?? 0
    }

    /// Records `source`'s count after the event at `seq`, when `change` moved it.
    static func adjustCount(source: String, by change: Int, seq: UInt64, _ txn: Transaction, _ tables: TableSet) throws {
        guard change != 0 else { return }
        try CountBlocks.update(prefix(source, tables), seq: seq, width: 1, try txn.cursor(tables[counts])) { old in
            [UInt64(max(0, Int(clamping: old?[0] ?? 0) + change))]
        }
    }
}
