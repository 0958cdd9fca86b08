import EventStore
import LMDB

/// The `schema` projection's `drift` table: each drift of a source's shape once, in a row of its
/// own. Drifts are facts that never change; kept as documents they each paid for a current
/// record, an order entry and a history record (2,480 of them were a quarter of the projection
/// on the first 2,500 commits of a real scraping history).
///
/// Key: `SOURCE 0x00 seq(u64be) PATH`, the texts as ``TableSet/text(_:)`` has them (digests in an
/// encrypted store): a source's drifts in log order, a seek to the first after a seq.
/// Value: `u8 kind (0 added, 1 gone, 2 typeChanged) | i64 observed (µs since 1970) | u8 types
/// before | u8 types after (bit i: ``types``[i]) | varint items | varint n, n bytes path |
/// varint m, m bytes example (canonical JSON; m = 0: none)`.
package enum SchemaDriftRows {
    package static let table = "drift"
    static let kinds = ["added", "gone", "typeChanged"]
    static let types = ["null", "boolean", "number", "string", "array", "object"]

    static func prefix(_ source: String, _ tables: TableSet) -> [UInt8] { tables.text(source) + [0] }

    static func put(_ d: SchemaDriftEntity, source: String, _ ctx: ProjectionContext) throws {
        guard let kind = kinds.firstIndex(of: d.kind) else { throw DocumentError("unknown drift kind \(d.kind)") }
        func mask(_ names: [String]) throws -> UInt8 {
            try names.reduce(0) { m, t in
                guard let i = types.firstIndex(of: t) else { throw DocumentError("unknown JSON type \(t)") }
                return m | 1 << i
            }
        }
        var w = ByteWriter(capacity: 64)
        w.u8(UInt8(kind))
        w.i64(d.at.microseconds)
        w.u8(try mask(d.before))
        w.u8(try mask(d.after))
        w.varint(d.items)
        w.string(d.path)
        w.blob(d.example?.canonicalBytes ?? [])
        let key = prefix(source, ctx.tables) + d.seq.bigEndianBytes + ctx.tables.text(d.path)
        _ = try ctx.transaction.put(ctx.tables[table], key: key, value: w.bytes)
    }

    /// `source`'s drifts after seq `after` up to seq `upTo`, oldest first (by seq, then path):
    /// the walk stops at the first past `upTo`, so a read as of a point decodes none after it.
    static func read(source: String, after: UInt64, upTo: UInt64 = .max, _ reader: DocumentReader) throws -> [SchemaDriftEntity] {
        let p = prefix(source, reader.tables)
        let c = try reader.transaction.cursor(reader.tables[table])
        var out: [SchemaDriftEntity] = []
        var entry = try c.seek(atLeast: p + (after == .max ? after : after + 1).bigEndianBytes)
        while let e = entry, e.key.count >= p.count + 8, e.key.starts(with: p) {
            let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: e.key[p.count..<(p.count + 8)]))
            if seq > upTo { break }
            if seq > after { out.append(try decode(seq: seq, e.value)) }
            entry = try c.next()
        }
        // An encrypted store's paths are digests in the key: back in path order within a seq.
        return out.sorted { ($0.seq, $0.path) < ($1.seq, $1.path) }
    }

    static func decode(seq: UInt64, _ raw: UnsafeRawBufferPointer) throws -> SchemaDriftEntity {
        var r = ByteReader(raw)
        let kind = Int(try r.u8())
        guard kind < kinds.count else { throw DocumentError("unknown drift kind \(kind)") }
        let at = Timestamp(microseconds: try r.i64())
        func names(_ m: UInt8) -> [String] { types.indices.filter { m & 1 << $0 != 0 }.map { types[$0] } }
        let before = names(try r.u8()), after = names(try r.u8())
        let items = Int(try r.varint())
        let path = try r.string()
        let example = try r.blob()
        return SchemaDriftEntity(
            seq: seq, at: at, path: path, kind: kinds[kind], before: before, after: after, items: items,
            example: example.isEmpty ? nil : try JSONValue(parsing: example))
    }
}
