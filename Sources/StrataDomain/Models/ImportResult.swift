public import Foundation

/// Where backfilled history comes from.
public enum HistoryOrigin: Sendable, Hashable {
    /// JSON files, each a complete snapshot of the list, in this order, all observed at
    /// `observedAt` (nil: now).
    case files([String], observedAt: Date?)
    /// Every commit of a git repository that touched `path`, oldest first, each observed at its
    /// author (or committer) date; `since` excluded, `until` (default HEAD) included.
    case git(repository: String, path: String, since: String?, until: String?, committerDate: Bool)
}

/// What an import did.
public struct ImportResult: Sendable, Hashable {
    public var source: String
    /// Snapshots appended now.
    public var imported: Int
    /// Snapshots already imported before (same commit), skipped.
    public var alreadyImported: Int
    /// Empty or invalid versions, recorded as failures and skipped.
    public var failed: Int
    public var failures: [String]
    /// Bytes of JSON imported.
    public var bytes: Int
    /// Older than the newest observation: that one was restated and stays current.
    public var backfilled: Bool
    public var added: Int
    public var changed: Int
    public var removed: Int
    public var seconds: Double

    public init(
        source: String, imported: Int = 0, alreadyImported: Int = 0, failed: Int = 0, failures: [String] = [], bytes: Int = 0,
        backfilled: Bool = false, added: Int = 0, changed: Int = 0, removed: Int = 0, seconds: Double = 0
    ) {
        self.source = source; self.imported = imported; self.alreadyImported = alreadyImported; self.failed = failed; self.failures = failures
        self.bytes = bytes; self.backfilled = backfilled; self.added = added; self.changed = changed; self.removed = removed; self.seconds = seconds
    }
}
