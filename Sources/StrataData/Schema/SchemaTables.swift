public import EventStore
import Foundation

/// One field of a source's shape, as the `schema` projection keeps it.
public struct FieldShapeEntity: Sendable, Hashable {
    public var path: String
    /// Type → how many current items (or details) have it there.
    public var types: [String: Int]
    public var items: Int
    public var firstSeq: UInt64
    public var lastSeq: UInt64
    public var examples: [String: JSONValue]
}

/// One drift of a source's shape.
public struct SchemaDriftEntity: Sendable, Hashable {
    public var seq: UInt64
    public var at: Timestamp
    public var path: String
    public var kind: String
    public var before: [String]
    public var after: [String]
    public var items: Int
    public var example: JSONValue?
}

/// Reads of the `schema` projection.
public struct SchemaTables: Sendable {
    public let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// The fields of `source` as of `seq` (now when nil), with how many items and details there
    /// were then.
    public func fields(source: String, asOf seq: UInt64?) async throws -> (items: Int, details: Int, fields: [FieldShapeEntity]) {
        try await store.documents(projection: "schema") { r in
            let counts =
                try seq.map { try SchemaFieldRows.counts(source: source, asOf: $0, r) }
                ?? SchemaFieldRows.current(source: source, r.transaction, r.tables)
            let fields = try r.states(collection: "fields/" + source, asOf: seq).compactMap { s -> FieldShapeEntity? in
                guard case .object(let o) = s.document else { return nil }
                let c = counts[s.key] ?? SchemaFieldRows.Counts()
                let first: UInt64 = if case .number(let v)? = o["first"] { UInt64(v) ?? 0 } else { 0 }
                let examples: [String: JSONValue] = if case .object(let e)? = o["examples"] { e } else { [:] }
                return FieldShapeEntity(path: s.key, types: c.types, items: c.items, firstSeq: first, lastSeq: c.last, examples: examples)
            }
            let items = try SchemaItemRows.count(source: source, asOf: seq, r.transaction, r.tables)
            return (items, try r.count(collection: "details/" + source, asOf: seq), fields)
        }
    }

    /// Every drift of `source`'s shape after seq `after` up to seq `upTo`, oldest first.
    public func drift(source: String, after: UInt64 = 0, upTo: UInt64 = .max) async throws -> [SchemaDriftEntity] {
        try await store.documents(projection: "schema") { r in try SchemaDriftRows.read(source: source, after: after, upTo: upTo, r) }
    }
}
