/// What changed in a source's items between two points of the log.
package struct DiffCollection: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository

    package init(items: any ItemRepository, sources: any SourceRepository) {
        self.items = items
        self.sources = sources
    }

    /// `when`: only the items whose difference meets every expression, the item at `to` read as
    /// the item and at `from` as `old.` (an added item's `old.` fields are null; a removed one's
    /// fields are).
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` when `from`
    ///   is after `to`.
    package func callAsFunction(
        source name: String, from: PointInTime, to: PointInTime = .now, ignoring: [String] = [], when: [ItemExpression] = []
    ) async throws -> CollectionDiff {
        _ = try await sources.source(named: name)
        var diff = try await items.diff(source: name, from: from, to: to)
        guard diff.fromSeq <= diff.toSeq else {
            throw RepositoryError(.invalidQuery, "the first point (seq \(diff.fromSeq)) is after the second (seq \(diff.toSeq)); swap them")
        }
        if !when.isEmpty {
            diff.items = diff.items.filter { d in
                let after = d.kind == .removed ? nil : d.after, before = d.kind == .added ? nil : d.before
                return when.allSatisfy { $0.matches(new: after, old: before) }
            }
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
