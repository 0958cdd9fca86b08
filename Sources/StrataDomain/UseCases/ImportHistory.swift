/// Backfills a source's history from snapshot files or a git-scraping repository.
package struct ImportHistory: Sendable {
    let archive: any ArchiveRepository
    let sources: any SourceRepository
    let lease: LeaseSourceForWrite
    /// The store's own files, to pack it after a long import; nil: never packed.
    let files: (any StoreFilesRepository)?

    /// Snapshots from which an import ends packed unless told otherwise: a long import leaves
    /// freed pages, half-full leaves and unpacked envelopes that only a compaction took out
    /// (a third of the store of 2,500 commits of a real scraping history), and packing costs a
    /// few percent of such an import.
    package static let packAfter = 1_000

    package init(
        archive: any ArchiveRepository, sources: any SourceRepository, lease: LeaseSourceForWrite = .none, files: (any StoreFilesRepository)? = nil
    ) {
        self.archive = archive
        self.sources = sources
        self.lease = lease
        self.files = files
    }

    /// - Parameter pack: pack the store afterwards (true), never (false), or after an import of
    ///   ``packAfter`` snapshots or more (nil). The store is then replaced: the caller is done
    ///   with it. A store that cannot be packed (another process has it open) is left as it is,
    ///   and the result says why.
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, file or empty history;
    ///   `invalidQuery` for a snapshot that is not the source's list (files) or a git failure.
    package func callAsFunction(
        _ source: String, from origin: HistoryOrigin, pack: Bool? = nil, progress: (@Sendable (Int) -> Void)? = nil
    ) async throws -> ImportResult {
        _ = try await sources.source(named: source)
        try await lease(source)
        var result = try await archive.importHistory(source: source, from: origin, progress: progress)
        guard let files, pack ?? (result.imported >= Self.packAfter), result.imported > 0 else { return result }
        do {
            // Retention is for `compact` to apply when asked, not a side effect of an import.
            if case .done(let c) = try await files.compact(applyingRetention: false) { result.packed = .packed(before: c.bytesBefore, after: c.bytesAfter) }
        } catch let e as RepositoryError {
            result.packed = .notPacked(e.message)
        }
        return result
    }
}
