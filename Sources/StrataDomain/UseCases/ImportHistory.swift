/// Backfills a source's history from snapshot files or a git-scraping repository.
package struct ImportHistory: Sendable {
    let archive: any ArchiveRepository
    let sources: any SourceRepository
    let lease: LeaseSourceForWrite

    package init(archive: any ArchiveRepository, sources: any SourceRepository, lease: LeaseSourceForWrite = .none) {
        self.archive = archive
        self.sources = sources
        self.lease = lease
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, file or empty history;
    ///   `invalidQuery` for a snapshot that is not the source's list (files) or a git failure.
    package func callAsFunction(_ source: String, from origin: HistoryOrigin, progress: (@Sendable (Int) -> Void)? = nil) async throws -> ImportResult {
        _ = try await sources.source(named: source)
        try await lease(source)
        return try await archive.importHistory(source: source, from: origin, progress: progress)
    }
}
