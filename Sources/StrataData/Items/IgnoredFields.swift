import EventStore
import LMDB
import Foundation

/// A source's `ignore` fields in the items projection: fields that change on every poll. An item
/// whose fetched document differs from its current one only there is put as it stands, which
/// marks it seen and makes no version, no diff entry and so no alert; the page's stored body
/// keeps the new values. The paths live in the projection's `ignored` table (source → JSON
/// array), written when the source's definition is folded.
struct IgnoredFields {
    static let table = "ignored"
    let source: String
    let paths: [[String]]
    let reader: DocumentReader

    /// The source's fields, or nil when it ignores none.
    init?(source: String, _ ctx: ProjectionContext) throws {
        guard let raw = try ctx.transaction.get(ctx.tables[Self.table], key: ctx.tables.text(source)),
            case .array(let list) = try JSONValue(parsing: raw)
        else { return nil }
        let paths = list.compactMap { v -> [String]? in if case .string(let p) = v { p.split(separator: ".").map(String.init) } else { nil } }
        guard !paths.isEmpty else { return nil }
        self.source = source
        self.paths = paths
        reader = DocumentReader(transaction: ctx.transaction, tables: ctx.tables)
    }

    /// Records a definition's `ignore` (nil or empty: none).
    static func set(_ value: JSONValue?, source: String, _ ctx: ProjectionContext) throws {
        let key = ctx.tables.text(source)
        if case .array(let list)? = value, !list.isEmpty {
            _ = try ctx.transaction.put(ctx.tables[table], key: key, value: JSONValue.array(list).canonicalBytes)
        } else {
            _ = try ctx.transaction.delete(ctx.tables[table], key: key)
        }
    }

    /// Replaces each item that changed only in the ignored fields by its current document.
    func keepUnchanged(_ items: inout [(key: String, item: JSONValue)]) throws {
        for i in items.indices {
            guard let current = try reader.state(collection: source, key: items[i].key), !current.removed, current.document != items[i].item else { continue }
            if stripped(current.document) == stripped(items[i].item) { items[i].item = current.document }
        }
    }

    private func stripped(_ v: JSONValue) -> JSONValue {
        paths.reduce(v) { Self.removing($1[...], from: $0) }
    }

    /// `value` without the member at `path` (into objects, and into every element of an array).
    private static func removing(_ path: ArraySlice<String>, from value: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        switch value {
        case .object(var o):
            if path.count == 1 {
                o.removeValue(forKey: first)
            } else if let inner = o[first] {
                o[first] = removing(path.dropFirst(), from: inner)
            }
            return .object(o)
        case .array(let a):
            return .array(a.map { removing(path, from: $0) })
        default:
            return value
        }
    }
}
