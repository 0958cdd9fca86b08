public import StrataData

/// Defines, changes, lists and removes sources (each change an event in the log).
public struct ManageSources: Sendable {
    let catalog: any SourceCatalogRepository

    public init(catalog: any SourceCatalogRepository) { self.catalog = catalog }

    /// Records a new definition (or, with `replace`, a change) and returns its seq.
    /// - Throws: ``RepositoryError`` `invalidQuery` naming the flag at fault, or when the source
    ///   exists and `replace` is false.
    public func define(_ definition: SourceDefinition, replace: Bool = false) async throws -> UInt64 {
        do throws(FetchError) { try definition.validate() } catch { throw RepositoryError(.invalidQuery, error.message, cause: error) }
        return try await catalog.define(definition, replace: replace)
    }

    public func all() async throws -> [SourceDefinition] { try await catalog.definitions() }

    /// - Throws: ``RepositoryError`` `notFound`.
    public func definition(_ name: String) async throws -> SourceDefinition {
        guard let d = try await catalog.definition(name) else {
            throw RepositoryError(.notFound, "no source named \(name); see `strata source list`")
        }
        return d
    }

    /// - Throws: ``RepositoryError`` `notFound`.
    public func remove(_ name: String) async throws {
        _ = try await definition(name)
        try await catalog.remove(name)
    }
}
