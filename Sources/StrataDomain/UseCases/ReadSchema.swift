/// A source's shape over time: what its items look like at a point, and how that drifted.
package struct ReadSchema: Sendable {
    let schema: any SchemaRepository
    let sources: any SourceRepository
    let log: any EventLogRepository

    package init(schema: any SchemaRepository, sources: any SourceRepository, log: any EventLogRepository) {
        self.schema = schema
        self.sources = sources
        self.log = log
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source or a point before the log.
    package func callAsFunction(source: String, at point: PointInTime = .now) async throws -> SourceSchema {
        _ = try await sources.source(named: source)
        let seq = try await log.resolve(point)
        var s = try await schema.schema(source: source, asOf: point == .now ? nil : seq)
        s.seq = seq
        s.fields.sort { ($0.isDetail ? 1 : 0, $0.path) < ($1.isDetail ? 1 : 0, $1.path) }
        return s
    }

    /// The drift of `source`'s shape up to a point, oldest first.
    package func history(source: String, upTo point: PointInTime = .now) async throws -> [SchemaDrift] {
        _ = try await sources.source(named: source)
        let seq = try await log.resolve(point)
        return try await schema.drift(source: source, after: 0, upTo: seq)
    }
}
