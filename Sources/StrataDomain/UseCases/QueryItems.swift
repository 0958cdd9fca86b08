/// Reads a page of a source's items from the store, with the source (for its staleness).
package struct QueryItems: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository

    package init(items: any ItemRepository, sources: any SourceRepository) {
        self.items = items
        self.sources = sources
    }

    package struct Result: Sendable, Hashable {
        package var source: Source
        package var page: ItemPage
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` for a bad query.
    package func callAsFunction(_ query: ItemQuery) async throws -> Result {
        if let limit = query.limit, limit < 1 { throw RepositoryError(.invalidQuery, "the limit must be at least 1") }
        if query.offset < 0 { throw RepositoryError(.invalidQuery, "the offset must not be negative") }
        let source = try await sources.source(named: query.source)
        return Result(source: source, page: try await items.items(query))
    }

    /// How many items match, grouped by the values at `paths` (`count --by`), with the source.
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source.
    package func count(_ query: ItemQuery, by paths: [String]) async throws -> (source: Source, counts: [ItemCount], usedIndex: Bool) {
        let source = try await sources.source(named: query.source)
        let (counts, usedIndex) = try await items.count(query, by: paths)
        return (source, counts, usedIndex)
    }
}
