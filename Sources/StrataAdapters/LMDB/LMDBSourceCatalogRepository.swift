package import StrataDomain
import EventStore
package import StrataData
package import StrataJSON

/// ``SourceCatalogRepository`` over the data layer's ``SourceCatalog`` (definitions as events).
package struct LMDBSourceCatalogRepository: SourceCatalogRepository {
    let catalog: SourceCatalog

    package init(catalog: SourceCatalog) { self.catalog = catalog }

    package func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws {
        try spec.validateForDefinition(keepingLiteralSecrets: keepingLiteralSecrets)
    }

    package func define(_ spec: SourceSpec, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64 {
        try await storage { try await catalog.define(spec.definition, replace: replace, keepingLiteralSecrets: keepingLiteralSecrets).seq }
    }

    package func definitions() async throws -> [SourceSpec] { try await storage { try await catalog.all() }.map(SourceSpec.init) }

    package func definition(_ name: String) async throws -> SourceSpec? { try await storage { try await catalog.get(name) }.map(SourceSpec.init) }

    package func storedForm(_ spec: SourceSpec) -> JSONValue { spec.masked.json }

    package func remove(_ name: String) async throws {
        try await storage { try await catalog.remove(name) }
    }
}
