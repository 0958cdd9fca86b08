public import EventStore
import Foundation
import LMDB

/// The `schema` projection: the shape of each source's items and details, kept incrementally,
/// and its drift as it happened.
///
/// - Each source's current items, with their shapes, and how many there were at any seq: rows
///   of the `items` and `item-counts` tables (``SchemaItemRows``). A shape is a sorted array of
///   `"PATH\tTYPE"` (a path is dotted, `[]` for an array's elements; a type is a JSON type),
///   kept once in the `shapes` table under the hex of the first 16 bytes of its SHA-256. A row is
///   put for every item of every page whose text changed, its last sighting updated for the
///   others; a complete pass removes the items it did not see, as the items projection does.
/// - `details/SOURCE` (a collection of this ``KeyedDocumentProjection``), key = item id: the
///   detail's shape's reference as a JSON string (details are not swept).
/// - `fields/SOURCE`, key = path (`detail:` before a detail's): `{"first": seq, "examples":
///   {TYPE: value}}`, the seq the path first appeared and an example of each type it has. How
///   many current items carry the path, with each type, and the seq that last changed, are
///   rows (``SchemaFieldRows``): they change with nearly every event.
///
/// And each drift of a source's shape (a path added, gone, or its types changed) once, in the
/// `drift` table (``SchemaDriftRows``).
public enum SchemaProjection {
    public static let projection = KeyedDocumentProjection(
        name: "schema", version: 20,
        eventTypes: [DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.fetchCompleted, DataEvents.detailFetched],
        extraTables: [SchemaItemRows.table, SchemaItemRows.counts, shapes, SchemaDriftRows.table, SchemaFieldRows.now, SchemaFieldRows.history],
        // A dropped page has no items; an erased or dropped detail has no shape.
        skipping: EventFate.gone
    ) { event, _, ctx in
        try fold(event, ctx)
    }

    /// A shape's reference (the hex of ``reference(_:_:)``'s bytes, a keyed digest of it in an
    /// encrypted store) → the shape's canonical JSON: each distinct shape once, whatever number
    /// of items has it.
    static let shapes = "shapes"

    /// The first 16 bytes of SHA-256 of `shape`'s canonical JSON, the shape written to
    /// ``shapes`` when it is new: compressed against the first shape written for `family` (a
    /// source's items, or its details), its *anchor*, when that is smaller. A source's shapes
    /// differ by a few paths: on the fires history its 197 shapes took 0.09 MB compressed alone
    /// (since schema 11: 2.3× smaller than the JSON) and take 0.03 MB against the anchor (schema
    /// 20). The anchor is the first new shape in log order, so a rebuild picks the same one.
    static func reference(_ shape: Shape, family: String, _ ctx: ProjectionContext) throws -> [UInt8] {
        let json = shape.json.canonicalBytes
        let ref = Hashing.sha256(json, prefix: 16)
        let key = ctx.tables.text(ref.hex)
        let table = ctx.tables[shapes]
        guard try ctx.transaction.get(table, key: key) == nil else { return ref }
        let anchorKey = ctx.tables.text(anchorPrefix + family)
        if let name = try ctx.transaction.get(table, key: anchorKey) {
            guard let anchor = try ctx.transaction.get(table, key: ctx.tables.text(name.hex)) else {
                throw DocumentError("the shape \(name.hex), the anchor of \(family)'s shapes, is missing")
            }
            let bytes = try anchor.withUnsafeBytes { try CompressedValue.decode($0) }
            _ = try ctx.transaction.put(table, key: key, value: CompressedValue.encode(json, against: (name, bytes)))
        } else {
            _ = try ctx.transaction.put(table, key: key, value: CompressedValue.encode(json))
            _ = try ctx.transaction.put(table, key: anchorKey, value: ref)
        }
        return ref
    }

    /// Where ``shapes`` names a family's anchor: a key no hex reference has.
    static let anchorPrefix = "anchor:"

    static func fold(_ event: RecordedEvent, _ ctx: ProjectionContext) throws -> [DocumentOperation] {
        guard let source = event[metadata: "source"] else { throw DocumentError("\(event.type) without a source") }
        let reader = DocumentReader(transaction: ctx.transaction, tables: ctx.tables)
        var fields = FieldCounts(source: source, reader: reader)
        var ops: [DocumentOperation] = []
        switch event.type {
        case DataEvents.pageFetched, DataEvents.pageNotModified:
            guard let body = try ctx.payload(of: event) else { throw DocumentError("page event without a body") }
            var added = 0
            let rows = try ctx.transaction.cursor(ctx.tables[SchemaItemRows.table])
            for (key, canonical, digest, _) in try ItemExtraction.pageItems(event, body: body, ctx) {
                let rowKey = SchemaItemRows.key(source, key, ctx.tables)
                let was = try SchemaItemRows.row(rowKey, at: rows)
                // An item whose text is what it was has the shape it had: only its sighting moves.
                if var row = was, row.digest == digest {
                    if row.lastSeen != event.seq {
                        row.lastSeen = event.seq
                        try SchemaItemRows.put(rowKey, row, at: rows, found: true)
                    }
                    continue
                }
                let item = try JSONValue(parsing: canonical)
                let shape = Shape(of: item, prefix: "")
                // Only the `shapes` table is written after the seek: the cursor stays where it is.
                let ref = try reference(shape, family: source, ctx)
                try fields.replace(try was.map { (try stored(reader, ref: $0.shape.hex), $0.shape) }, with: (shape, ref), document: item)
                let row = SchemaItemRows.Row(digest: digest, shape: ref, lastSeen: event.seq)
                try SchemaItemRows.put(rowKey, row, at: rows, found: was != nil)
                if was == nil { added += 1 }
            }
            try SchemaItemRows.adjustCount(source: source, by: added, seq: event.seq, ctx.transaction, ctx.tables)
        case DataEvents.fetchCompleted:
            guard event[metadata: "complete"] == "true", let pages = event[metadata: "pages"].flatMap(UInt64.init), pages < event.seq else { return [] }
            let gone = try SchemaItemRows.unseen(source: source, since: event.seq - pages, ctx.transaction, ctx.tables)
            for (key, row) in gone {
                try fields.replace((try stored(reader, ref: row.shape.hex), row.shape), with: nil, document: nil)
                _ = try ctx.transaction.delete(ctx.tables[SchemaItemRows.table], key: key)
            }
            try SchemaItemRows.adjustCount(source: source, by: -gone.count, seq: event.seq, ctx.transaction, ctx.tables)
        case DataEvents.detailFetched:
            guard let key = event[metadata: "key"], let body = try ctx.payload(of: event) else { throw DocumentError("detail event without a key or body") }
            guard let detail = try? JSONValue(parsing: body) else { return [] }
            let shape = Shape(of: detail, prefix: "detail:")
            let ref = try reference(shape, family: "detail:" + source, ctx)
            try fields.replace(try stored(reader, "details/" + source, key), with: (shape, ref), document: detail)
            ops.append(.put(collection: "details/" + source, key: key, document: .string(ref.hex)))
        default:
            return []
        }
        return ops + (try fields.operations(event, ctx))
    }

    /// The shape a detail's entry refers to, and the reference, nil when it has none.
    private static func stored(_ reader: DocumentReader, _ collection: String, _ key: String) throws -> (Shape, [UInt8])? {
        guard let s = try reader.state(collection: collection, key: key), !s.removed, case .string(let ref) = s.document else { return nil }
        guard let bytes = [UInt8](hex: ref) else { throw DocumentError("the shape reference \(ref) is not hex") }
        return (try stored(reader, ref: ref), bytes)
    }

    /// The shape of reference `ref` (hex).
    static func stored(_ reader: DocumentReader, ref: String) throws -> Shape {
        guard let stored = try reader.transaction.get(reader.tables[shapes], key: reader.tables.text(ref)) else {
            throw DocumentError("the shape \(ref) is missing")
        }
        let json = try stored.withUnsafeBytes {
            try CompressedValue.decode($0, anchor: { try reader.transaction.get(reader.tables[shapes], key: reader.tables.text($0.hex)) })
        }
        guard case .array(let a) = try JSONValue(parsing: json) else { throw DocumentError("the shape \(ref) is not a list") }
        return Shape(entries: a.compactMap { if case .string(let e) = $0 { e } else { nil } })
    }

}

/// A document's shape: every path with the JSON type found there.
struct Shape: Equatable {
    var entries: Set<String>

    init(entries: [String]) { self.entries = Set(entries) }

    init(of value: JSONValue, prefix: String) {
        var out = Set<String>()
        Self.walk(value, path: prefix, root: true, into: &out)
        entries = out
    }

    var json: JSONValue { .array(entries.sorted().map { .string($0) }) }

    /// path → types.
    var byPath: [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        for e in entries {
            guard let tab = e.lastIndex(of: "\t") else { continue }
            out[String(e[..<tab]), default: []].insert(String(e[e.index(after: tab)...]))
        }
        return out
    }

    static func type(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    private static func walk(_ v: JSONValue, path: String, root: Bool, into out: inout Set<String>) {
        if !root { out.insert(path + "\t" + type(v)) }
        switch v {
        case .object(let o):
            let base = root ? path : path + "."
            for (k, child) in o { walk(child, path: base + k, root: false, into: &out) }
        case .array(let a):
            for child in a { walk(child, path: path + "[]", root: false, into: &out) }
        default:
            break
        }
    }
}

/// The fields an event touches: their counts (``SchemaFieldRows``) read once, changed in
/// memory, written with the drift they show; their `fields/SOURCE` documents (the seq a path
/// first appeared, an example of each type it has) read and written only when those change.
struct FieldCounts {
    let source: String
    let reader: DocumentReader
    private var rows: [String: SchemaFieldRows.Now] = [:]
    private var before: [String: SchemaFieldRows.Counts] = [:]
    private var examples: [String: [String: JSONValue]] = [:]
    /// Shape reference → how many more documents have it after the event.
    private var shapes: [[UInt8]: Int] = [:]

    init(source: String, reader: DocumentReader) {
        self.source = source
        self.reader = reader
    }

    private mutating func row(_ path: String) throws -> SchemaFieldRows.Now {
        if let r = rows[path] { return r }
        let r = try SchemaFieldRows.row(source: source, path: path, reader.transaction, reader.tables) ?? SchemaFieldRows.Now(path: path)
        before[path] = r.counts
        return r
    }

    /// One document's shape going from `old` to `new` (nil: absent), with their references.
    mutating func replace(_ old: (shape: Shape, ref: [UInt8])?, with new: (shape: Shape, ref: [UInt8])?, document: JSONValue?) throws {
        guard old?.ref != new?.ref else { return }
        if let old { shapes[old.ref, default: 0] -= 1 }
        if let new { shapes[new.ref, default: 0] += 1 }
        let a = old?.shape.byPath ?? [:], b = new?.shape.byPath ?? [:]
        for path in Set(a.keys).union(b.keys) {
            let was = a[path] ?? [], now = b[path] ?? []
            guard was != now else { continue }
            var r = try row(path)
            // One document of the old shape out, one of the new in (a count never below 0).
            if !was.isEmpty { r.counts.add(was, times: -1) }
            if !now.isEmpty { r.counts.add(now, times: 1) }
            r.counts.values = r.counts.values.map { max(0, $0) }
            if let document {
                for t in now.subtracting(was) where examples[path]?[t] == nil {
                    if let example = Self.example(at: path, type: t, in: document) { examples[path, default: [:]][t] = example }
                }
            }
            rows[path] = r
        }
    }

    /// The writes of the touched fields: their counts, their documents when the first seq or
    /// the examples change, and their drift, into the `drift` table.
    func operations(_ event: RecordedEvent, _ ctx: ProjectionContext) throws -> [DocumentOperation] {
        var ops: [DocumentOperation] = []
        var drifts: [SchemaDriftEntity] = []
        var changed: [SchemaFieldRows.Now] = []
        for (path, entry) in rows.sorted(by: { $0.key < $1.key }) {
            var r = entry
            let was = before[path] ?? SchemaFieldRows.Counts()
            guard r.counts.values != was.values else { continue }
            r.counts.last = event.seq
            let items = r.counts.items, types = Set(r.counts.types.keys), wasTypes = Set(was.types.keys)
            // The document: written when the path is new, when this event found an example of a
            // type it has none of, or when it keeps one of a type the path no longer has.
            let present = Self.mask(types)
            let found = (examples[path] ?? [:]).filter { types.contains($0.key) && r.examples & Self.mask([$0.key]) == 0 }
            var known: [String: JSONValue] = [:]
            if !r.stored || !found.isEmpty || r.examples & ~present != 0 {
                var f: [String: JSONValue] = [:]
                if let s = try reader.state(collection: "fields/" + source, key: path), !s.removed, case .object(let o) = s.document { f = o }
                if case .object(let e)? = f["examples"] { known = e }
                for (t, v) in found where known[t] == nil { known[t] = v }
                known = known.filter { types.contains($0.key) }
                var updated = f
                if updated["first"] == nil { updated["first"] = .number(String(event.seq)) }
                updated["examples"] = .object(known)
                if updated != f { ops.append(.put(collection: "fields/" + source, key: path, document: .object(updated))) }
                r.examples = Self.mask(Set(known.keys))
            }
            changed.append(r)
            let kind: String? =
                was.items == 0 && items > 0 ? "added" : was.items > 0 && items == 0 ? "gone" : types != wasTypes && items > 0 ? "typeChanged" : nil
            guard let kind else { continue }
            // An example of a type new to the path was found in this event, if any: the path's
            // examples never keep a type it does not have.
            let example = types.subtracting(wasTypes).sorted().first.flatMap { known[$0] }
            drifts.append(
                SchemaDriftEntity(
                    seq: event.seq, at: event.recordedAt, path: path, kind: kind, before: wasTypes.sorted(), after: types.sorted(), items: items,
                    example: example))
        }
        try SchemaFieldRows.record(changed, shapes: shapes, source: source, seq: event.seq, ctx)
        try SchemaDriftRows.put(drifts, source: source, ctx)
        return ops
    }

    /// Bit i for each type ``SchemaDriftRows/types``[i] in `types`.
    static func mask(_ types: some Sequence<String>) -> UInt8 {
        types.reduce(0) { m, t in m | (SchemaDriftRows.types.firstIndex(of: t).map { UInt8(1) << $0 } ?? 0) }
    }

    /// A value of type `type` at `path` in `document`, short: for drift reports.
    static func example(at path: String, type: String, in document: JSONValue) -> JSONValue? {
        var parts = Substring(path.hasPrefix("detail:") ? String(path.dropFirst(7)) : path).split(separator: ".").map(String.init)
        var values = [document]
        while !parts.isEmpty {
            var key = parts.removeFirst()
            var elements = 0
            while key.hasSuffix("[]") { key.removeLast(2); elements += 1 }
            values = values.compactMap { if case .object(let o) = $0 { o[key] } else { nil } }
            for _ in 0..<elements { values = values.flatMap { v -> [JSONValue] in if case .array(let a) = v { a } else { [] } } }
        }
        guard let v = values.first(where: { Shape.type($0) == type }) else { return nil }
        switch v {
        case .object: return .string("{…}")
        case .array: return .string("[…]")
        case .string(let s) where s.count > 80: return .string(String(s.prefix(79)) + "…")
        default: return v
        }
    }
}
