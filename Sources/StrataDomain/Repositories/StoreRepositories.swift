/// The upkeep of an opened store: checks, rebuilds, figures, raw appends and points of its log.
package protocol StoreMaintenanceRepository: Sendable {
    /// Checks the hash chain and every body, and with `checkProjections` each projection against
    /// a rebuild of it.
    func verify(checkProjections: Bool) async throws -> StoreVerification
    /// Rebuilds the named projections (all when empty) and returns the names rebuilt.
    func rebuild(_ projections: [String], progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> [String]
    func statistics() async throws -> StoreStatistics
    /// Appends one event as given; an id already in the log appends nothing.
    func append(_ entry: NewLogEntry) async throws -> AppendResult
    /// The seq a point stands for: the seq itself, or the last event recorded at or before a time.
    func seq(at point: LogPoint) async throws -> UInt64
    func head() async throws -> UInt64
}

/// Keyed documents of one of the store's projections: their states, versions and differences.
package protocol DocumentRepository: Sendable {
    func documents(projection: String, collection: String, asOf seq: UInt64?, includeRemoved: Bool) async throws -> [KeyedDocument]
    func document(projection: String, collection: String, key: String, asOf seq: UInt64?) async throws -> KeyedDocument?
    func history(projection: String, collection: String, key: String, upTo seq: UInt64) async throws -> [KeyedDocumentVersion]
    func diff(projection: String, collection: String, from: UInt64, to: UInt64) async throws -> [KeyedDocumentDiff]
}

/// The store as files, open or not: whether it exists, its chain checked without its key, and
/// the copies that replace it (compacted, or under another key).
package protocol StoreFilesRepository: Sendable {
    var path: String { get }
    func exists() -> Bool
    /// Checks the log's hash chain over the stored rows, without the key and without opening the
    /// store for writing.
    func verifyChain() throws -> StoreVerification
    /// Rewrites the store without the pages its transactions freed, each table's pages full and
    /// the envelopes packed; sources' retention is applied first when `applyingRetention`.
    func compact(applyingRetention: Bool) async throws -> Replacement<Compaction>
    /// Rewrites the store under the key in `keyFile` (created if missing), or without encryption
    /// when nil; a stopped rekey goes on from its copy.
    func rekey(toKeyFile keyFile: String?, progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> Replacement<LogHead>
    /// Writes a new key to `file` (mode 0600, never over an existing file).
    func createKey(at file: String) throws
}

/// The store's redaction key and the history's record of it (``ManageRedactionKey``).
package protocol RedactionKeyRepository: Sendable {
    func status() async throws -> RedactionKeyStatus
    /// Throws ``RepositoryError`` `key` when the history records another key or the file is no key.
    func install(fromFile file: String) async throws -> (record: RedactionKeyRecord, recorded: Bool)
    /// Writes the key to a new file, mode 0600 (never over an existing one); returns its check.
    func export(toFile file: String) async throws -> String
    /// A new key (from `file`, or random) for the history from here on, recorded.
    func rotate(toFile file: String?) async throws -> RedactionKeyRecord
}
