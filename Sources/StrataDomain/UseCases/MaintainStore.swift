/// The store's upkeep: verify, rebuild, statistics, and appending an event as given.
package struct MaintainStore: Sendable {
    let store: any StoreMaintenanceRepository

    package init(store: any StoreMaintenanceRepository) { self.store = store }

    package func verify(checkProjections: Bool) async throws -> StoreVerification { try await store.verify(checkProjections: checkProjections) }

    /// Rebuilds the named projections (all when empty); returns their names and the head seq.
    package func rebuild(_ projections: [String], progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> (names: [String], head: UInt64) {
        let names = try await store.rebuild(projections, progress: progress)
        return (names, try await store.head())
    }

    package func statistics() async throws -> StoreStatistics { try await store.statistics() }

    package func record(_ entry: NewLogEntry) async throws -> AppendResult { try await store.append(entry) }

    package func seq(at point: LogPoint) async throws -> UInt64 { try await store.seq(at: point) }

    package func head() async throws -> UInt64 { try await store.head() }
}

/// Reads keyed documents of any projection, now or at a point of the log.
package struct ReadDocuments: Sendable {
    let documents: any DocumentRepository
    let store: any StoreMaintenanceRepository

    package init(documents: any DocumentRepository, store: any StoreMaintenanceRepository) {
        self.documents = documents
        self.store = store
    }

    package func list(projection: String, collection: String, at point: LogPoint?, includeRemoved: Bool) async throws -> (
        seq: UInt64?, documents: [KeyedDocument]
    ) {
        let seq = try await seq(at: point)
        return (seq, try await documents.documents(projection: projection, collection: collection, asOf: seq, includeRemoved: includeRemoved))
    }

    package func document(projection: String, collection: String, key: String, at point: LogPoint?) async throws -> (seq: UInt64?, document: KeyedDocument?) {
        let seq = try await seq(at: point)
        return (seq, try await documents.document(projection: projection, collection: collection, key: key, asOf: seq))
    }

    package func history(projection: String, collection: String, key: String, upTo point: LogPoint?) async throws -> [KeyedDocumentVersion] {
        let seq = try await seq(at: point) ?? .max
        return try await documents.history(projection: projection, collection: collection, key: key, upTo: seq)
    }

    private func seq(at point: LogPoint?) async throws -> UInt64? {
        guard let point else { return nil }
        return try await store.seq(at: point)
    }

    /// The differences between two points; the later one is the head when nil.
    package func diff(projection: String, collection: String, from: LogPoint, to: LogPoint?) async throws -> (
        from: UInt64, to: UInt64, diffs: [KeyedDocumentDiff]
    ) {
        let a = try await store.seq(at: from)
        let head = try await store.head()
        let b = try await seq(at: to) ?? head
        return (a, b, try await documents.diff(projection: projection, collection: collection, from: a, to: b))
    }
}

/// The store's files: its chain checked without a key, compaction, a new key, key files.
package struct ManageStoreFiles: Sendable {
    let files: any StoreFilesRepository

    package init(files: any StoreFilesRepository) { self.files = files }

    package var path: String { files.path }
    package var exists: Bool { files.exists() }

    /// - Throws: ``RepositoryError`` `storage` when there is no store.
    package func verifyChain() throws -> StoreVerification {
        guard files.exists() else { throw RepositoryError(.storage, "no store at \(files.path)") }
        return try files.verifyChain()
    }

    /// - Throws: ``RepositoryError`` `storage` when there is no store.
    package func compact() async throws -> Replacement<Compaction> {
        guard files.exists() else { throw RepositoryError(.storage, "no store at \(files.path)") }
        return try await files.compact(applyingRetention: true)
    }

    package func rekey(toKeyFile keyFile: String?, progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> Replacement<LogHead> {
        try await files.rekey(toKeyFile: keyFile, progress: progress)
    }

    package func createKey(at file: String) throws { try files.createKey(at: file) }
}
