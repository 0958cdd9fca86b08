package import StrataDomain
import EventStore
package import StrataData
package import StrataJSON

/// ``SourceCatalogRepository`` over the data layer's ``SourceCatalog`` (definitions as events).
package struct LMDBSourceCatalogRepository: SourceCatalogRepository {
    let catalog: SourceCatalog

    package init(catalog: SourceCatalog) { self.catalog = catalog }

    package func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws {
        try spec.validate(keepingLiteralSecrets: keepingLiteralSecrets)
    }

    package func define(_ spec: SourceSpec, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64 {
        do { return try await catalog.define(spec.definition, replace: replace, keepingLiteralSecrets: keepingLiteralSecrets).seq } catch let e as FetchError {
            throw RepositoryError(.invalidQuery, e.message, cause: e)
        }
    }

    package func definitions() async throws -> [SourceSpec] { try await storage { try await catalog.all() }.map(SourceSpec.init) }

    package func definition(_ name: String) async throws -> SourceSpec? { try await storage { try await catalog.get(name) }.map(SourceSpec.init) }

    package func storedForm(_ spec: SourceSpec) -> JSONValue { spec.masked.json }

    package func remove(_ name: String) async throws {
        do { try await catalog.remove(name) } catch let e as FetchError { throw RepositoryError(.notFound, e.message, cause: e) }
    }
}
