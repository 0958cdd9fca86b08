package import StrataDomain
package import StrataData

/// ``SourceRepository`` over the `sources` projection and the fetch events of the log.
package struct LMDBSourceRepository: SourceRepository {
    let tables: ItemTables

    package init(tables: ItemTables) { self.tables = tables }

    package func sources() async throws -> [Source] {
        try await storage { try await tables.sources() }.map(Source.init(entity:))
    }

    package func source(named name: String) async throws -> Source {
        guard let entity = try await storage({ try await tables.source(named: name) }) else {
            let known = try await sources().map(\.name)
            if known.isEmpty { throw RepositoryError(.notFound, "no source named \(name)", next: .defineSource) }
            throw RepositoryError(.notFound, "no source named \(name); known: \(known.joined(separator: ", "))")
        }
        return Source(entity: entity)
    }
}
