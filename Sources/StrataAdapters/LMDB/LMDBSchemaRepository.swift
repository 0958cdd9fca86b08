import EventStore
package import StrataData
package import StrataDomain

/// ``SchemaRepository`` over the `schema` projection.
package struct LMDBSchemaRepository: SchemaRepository {
    let tables: SchemaTables

    package init(tables: SchemaTables) {
        self.tables = tables
    }

    package func schema(source: String, asOf seq: UInt64?) async throws -> SourceSchema {
        let r = try await storage { try await tables.fields(source: source, asOf: seq) }
        return SourceSchema(
            source: source, seq: seq ?? 0, items: r.items, details: r.details,
            fields: r.fields.filter { $0.items > 0 }.map {
                FieldShape(path: $0.path, types: $0.types, items: $0.items, firstSeq: $0.firstSeq, lastChangedSeq: $0.lastSeq, examples: $0.examples)
            })
    }

    package func drift(source: String, after: UInt64, upTo: UInt64) async throws -> [SchemaDrift] {
        try await storage { try await tables.drift(source: source, after: after, upTo: upTo) }.compactMap { d in
            SchemaDrift.Kind(rawValue: d.kind).map {
                SchemaDrift(kind: $0, seq: d.seq, observedAt: d.at.date, path: d.path, before: d.before, after: d.after, items: d.items, example: d.example)
            }
        }
    }
}
