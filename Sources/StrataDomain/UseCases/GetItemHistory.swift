/// Every version of an item with its field-level changes, optionally hiding churning fields.
package struct GetItemHistory: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository
    let erasures: (any ErasureRepository)?

    package init(items: any ItemRepository, sources: any SourceRepository, erasures: (any ErasureRepository)? = nil) {
        self.items = items
        self.sources = sources
        self.erasures = erasures
    }

    package struct Result: Sendable, Hashable {
        package var source: Source
        package var id: String
        package var versions: [ItemVersion]
    }

    /// - Parameter ignoring: dotted paths or JSON Pointers whose changes are hidden; a `changed`
    ///   version left with no change is dropped.
    /// - Throws: ``RepositoryError`` `notFound` when the source or item has no history.
    package func callAsFunction(source name: String, id: String, upTo point: PointInTime = .now, ignoring: [String] = []) async throws -> Result {
        let source = try await sources.source(named: name)
        let versions = try await items.history(source: name, id: id, upTo: point)
        if versions.isEmpty { try await noHistory(name, id) }
        return Result(source: source, id: id, versions: versions.ignoring(ignoring))
    }

    /// Every version's place, and the few `page` picks in full: a long history's page.
    /// - Throws: ``RepositoryError`` `notFound` when the source or item has no history.
    package func page(source name: String, id: String, upTo point: PointInTime = .now, page: HistoryPage) async throws -> ItemHistoryPage {
        _ = try await sources.source(named: name)
        let history = try await items.history(source: name, id: id, upTo: point, page: page)
        if history.marks.isEmpty { try await noHistory(name, id) }
        return history
    }

    private func noHistory(_ name: String, _ id: String) async throws -> Never {
        if let erased = try await erasures?.erasure(source: name, id: id) { throw RepositoryError(.notFound, "\(id) in \(name) was \(erased.message)") }
        throw RepositoryError(.notFound, "no history for \(id) in \(name)", next: .listItems(source: name))
    }
}

extension [ItemVersion] {
    /// Hides changes to `paths`; drops `changed` versions left empty.
    func ignoring(_ paths: [String]) -> [ItemVersion] {
        guard !paths.isEmpty else { return self }
        return compactMap { v in
            var v = v
            v.changes.removeAll { c in paths.contains { c.touches($0) } }
            return v.kind == .changed && v.changes.isEmpty ? nil : v
        }
    }
}
