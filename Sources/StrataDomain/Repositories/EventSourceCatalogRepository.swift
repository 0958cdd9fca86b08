import EventStore
package import StrataData

/// ``SourceCatalogRepository`` over the data layer's ``SourceCatalog`` (definitions as events).
package struct EventSourceCatalogRepository: SourceCatalogRepository {
    let catalog: SourceCatalog

    package init(catalog: SourceCatalog) { self.catalog = catalog }

    package func define(_ definition: SourceDefinition, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64 {
        do { return try await catalog.define(definition, replace: replace, keepingLiteralSecrets: keepingLiteralSecrets).seq } catch let e as FetchError {
            throw RepositoryError(.invalidQuery, e.message, cause: e)
        }
    }

    package func definitions() async throws -> [SourceDefinition] { try await storage { try await catalog.all() } }

    package func definition(_ name: String) async throws -> SourceDefinition? { try await storage { try await catalog.get(name) } }

    package func remove(_ name: String) async throws {
        do { try await catalog.remove(name) } catch let e as FetchError { throw RepositoryError(.notFound, e.message, cause: e) }
    }
}
