/// What changed in a source's items between two points of the log.
package struct DiffCollection: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository

    package init(items: any ItemRepository, sources: any SourceRepository) {
        self.items = items
        self.sources = sources
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` when `from`
    ///   is after `to`.
    package func callAsFunction(source name: String, from: PointInTime, to: PointInTime = .now, ignoring: [String] = []) async throws -> CollectionDiff {
        _ = try await sources.source(named: name)
        var diff = try await items.diff(source: name, from: from, to: to)
        guard diff.fromSeq <= diff.toSeq else {
            throw RepositoryError(.invalidQuery, "the first point (seq \(diff.fromSeq)) is after the second (seq \(diff.toSeq)); swap them")
        }
        if !ignoring.isEmpty {
            diff.items = diff.items.compactMap { d in
                var d = d
                d.changes.removeAll { c in ignoring.contains { c.touches($0) } }
                return d.kind == .changed && d.changes.isEmpty ? nil : d
            }
        }
        return diff
    }
}
