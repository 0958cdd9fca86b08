import Foundation
package import StrataDomain
package import StrataJSON

/// A source's shape for people and programs: JSON Schema (draft 2020-12), a table, plain JSON,
/// and its drift as a table or JSON.
package enum SchemaRenderer {
    /// JSON Schema 2020-12 of the source's items (details under `x-strata-detail`): an object
    /// per level, `type` the types seen (one, or an array of them), `required` where every
    /// item (every parent carrying the object) has the field.
    package static func jsonSchema(_ s: SourceSchema) -> JSONValue {
        let items = s.fields.filter { !$0.isDetail }
        let details = s.fields.filter(\.isDetail).map { f in
            var f = f
            f.path = String(f.path.dropFirst("detail:".count))
            return f
        }
        var root = node(items, prefix: "", count: s.items)
        guard case .object(var o) = root else { return root }
        o["$schema"] = .string("https://json-schema.org/draft/2020-12/schema")
        o["title"] = .string("Items of \(s.source) as of seq \(s.seq)")
        if !details.isEmpty { o["x-strata-detail"] = node(details, prefix: "", count: s.details) }
        root = .object(o)
        return root
    }

    /// The schema of the fields under `prefix` (`""`, `owner.`, `tags[]`), present in `count`
    /// parents.
    private static func node(_ fields: [FieldShape], prefix: String, count: Int) -> JSONValue {
        var properties: [String: JSONValue] = [:]
        var required: [String] = []
        for f in fields where f.path.hasPrefix(prefix) {
            let rest = f.path.dropFirst(prefix.count)
            guard !rest.isEmpty, !rest.contains("."), !rest.hasPrefix("[]") else { continue }
            let name = rest.hasSuffix("[]") ? nil : String(rest)
            guard let name, !name.contains("[]") else { continue }
            properties[name] = property(f, fields: fields)
            if f.items == count && count > 0 { required.append(name) }
        }
        var o: [String: JSONValue] = ["type": .string("object"), "properties": .object(properties)]
        if !required.isEmpty { o["required"] = .array(required.sorted().map { .string($0) }) }
        return .object(o)
    }

    private static func property(_ f: FieldShape, fields: [FieldShape]) -> JSONValue {
        let types = f.typeNames
        var o: [String: JSONValue] = ["type": types.count == 1 ? .string(types[0]) : .array(types.map { .string($0) })]
        if types.contains("object") {
            if case .object(let nested) = node(fields, prefix: f.path + ".", count: f.types["object"] ?? 0) {
                for (k, v) in nested where k != "type" { o[k] = v }
            }
        }
        if types.contains("array"), let element = fields.first(where: { $0.path == f.path + "[]" }) {
            o["items"] = property(element, fields: fields)
        }
        o["x-strata"] = .object([
            "items": .number(String(f.items)), "counts": .object(f.types.mapValues { .number(String($0)) }), "firstSeq": .number(String(f.firstSeq))
        ])
        return .object(o)
    }

    package static func json(_ s: SourceSchema) -> JSONValue {
        .object([
            "source": .string(s.source), "seq": .number(String(s.seq)), "items": .number(String(s.items)), "details": .number(String(s.details)),
            "fields": .array(
                s.fields.map { f in
                    .object([
                        "path": .string(f.path), "types": .object(f.types.mapValues { .number(String($0)) }), "items": .number(String(f.items)),
                        "firstSeq": .number(String(f.firstSeq)), "lastChangedSeq": .number(String(f.lastChangedSeq)), "examples": .object(f.examples)
                    ])
                })
        ])
    }

    package static func heading(_ s: SourceSchema) -> String { "\(s.source) as of seq \(s.seq): \(s.items) items, \(s.details) details" }

    package static func table(_ s: SourceSchema) -> TextTable {
        var t = TextTable(headers: ["FIELD", "TYPES", "ITEMS", "SINCE SEQ", "EXAMPLE"])
        for f in s.fields {
            let of = f.isDetail ? s.details : s.items
            let types = f.typeNames.map { f.typeNames.count > 1 ? "\($0) (\(f.types[$0] ?? 0))" : $0 }.joined(separator: ", ")
            let example = f.typeNames.compactMap { f.examples[$0] }.first.map { ItemDiff.text($0) } ?? ""
            t.rows.append([f.path, types, "\(f.items)/\(of)", String(f.firstSeq), example])
        }
        return t
    }

    package static func json(_ drift: [SchemaDrift]) -> JSONValue {
        .array(
            drift.map { d in
                var o: [String: JSONValue] = [
                    "seq": .number(String(d.seq)), "observedAt": .string(LogTime(d.observedAt).iso8601), "path": .string(d.path),
                    "kind": .string(d.kind.rawValue),
                    "before": .array(d.before.map { .string($0) }), "after": .array(d.after.map { .string($0) }), "items": .number(String(d.items))
                ]
                if let e = d.example { o["example"] = e }
                return .object(o)
            })
    }

    package static func table(_ drift: [SchemaDrift]) -> TextTable {
        var t = TextTable(headers: ["SEQ", "OBSERVED", "FIELD", "DRIFT", "ITEMS", "EXAMPLE"])
        for d in drift {
            let what =
                switch d.kind {
                case .added: "added: " + d.after.joined(separator: "|")
                case .gone: "gone (was " + d.before.joined(separator: "|") + ")"
                case .typeChanged: d.before.joined(separator: "|") + " → " + d.after.joined(separator: "|")
                }
            t.rows.append([String(d.seq), LogTime(d.observedAt).iso8601, d.path, what, String(d.items), d.example.map { ItemDiff.text($0) } ?? ""])
        }
        return t
    }

    /// `schema --changes --format json`: `[{"path": "price", "changes": 812}, …]`, most first.
    package static func json(churn: [(path: String, changes: Int)]) -> JSONValue {
        .array(churn.map { .object(["path": .string($0.path), "changes": .number(String($0.changes))]) })
    }

    /// `schema --changes`: a row per field, most changed first.
    package static func table(churn: [(path: String, changes: Int)]) -> TextTable {
        var t = TextTable(headers: ["FIELD", "CHANGES"])
        for c in churn { t.rows.append([c.path.displayLine, String(c.changes)]) }
        return t
    }
}
