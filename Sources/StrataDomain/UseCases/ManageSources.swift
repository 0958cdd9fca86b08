package import StrataJSON

/// Defines, changes, lists and removes sources (each change an event in the log).
package struct ManageSources: Sendable {
    let catalog: any SourceCatalogRepository
    let lease: LeaseSourceForWrite

    package init(catalog: any SourceCatalogRepository, lease: LeaseSourceForWrite = .none) {
        self.catalog = catalog
        self.lease = lease
    }

    /// Records a new definition (or, with `replace`, a change) and returns its seq. A literal
    /// credential in a header is refused unless `keepingLiteralSecrets`: then it is kept outside
    /// the log, and the definition refers to it.
    /// - Throws: ``RepositoryError`` `invalidQuery` naming the flag at fault, or when the source
    ///   exists and `replace` is false.
    package func define(_ spec: SourceSpec, replace: Bool = false, keepingLiteralSecrets: Bool = false) async throws -> UInt64 {
        try catalog.validate(spec, keepingLiteralSecrets: keepingLiteralSecrets)
        try await lease(spec.name)
        return try await catalog.define(spec, replace: replace, keepingLiteralSecrets: keepingLiteralSecrets)
    }

    package func all() async throws -> [SourceSpec] { try await catalog.definitions() }

    /// The definition as stored (``SourceCatalogRepository/storedForm(_:)``): what `source show`
    /// and `GET /sources` give.
    package func storedForm(_ spec: SourceSpec) -> JSONValue { catalog.storedForm(spec) }

    /// - Throws: ``RepositoryError`` `notFound`.
    package func definition(_ name: String) async throws -> SourceSpec {
        guard let d = try await catalog.definition(name) else {
            throw RepositoryError(.notFound, "no source named \(name)", next: .listSources)
        }
        return d
    }

    /// - Throws: ``RepositoryError`` `notFound`.
    package func remove(_ name: String) async throws {
        _ = try await definition(name)
        try await lease(name)
        try await catalog.remove(name)
    }
}
