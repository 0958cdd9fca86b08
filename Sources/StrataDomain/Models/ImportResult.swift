package import Foundation

/// Where backfilled history comes from.
package enum HistoryOrigin: Sendable, Hashable {
    /// JSON files, each a complete snapshot of the list, in this order, all observed at
    /// `observedAt` (nil: now).
    case files([String], observedAt: Date?)
    /// Every commit of a git repository that touched `path`, oldest first, each observed at its
    /// author (or committer) date; `since` excluded, `until` (default HEAD) included.
    case git(repository: String, path: String, since: String?, until: String?, committerDate: Bool)
}

/// What an import did.
package struct ImportResult: Sendable, Hashable {
    package var source: String
    /// Snapshots appended now.
    package var imported: Int
    /// Snapshots already imported before (same commit), skipped.
    package var alreadyImported: Int
    /// Empty or invalid versions, recorded as failures and skipped.
    package var failed: Int
    package var failures: [String]
    /// Bytes of JSON imported.
    package var bytes: Int
    /// Older than the newest observation: that one was restated and stays current.
    package var backfilled: Bool
    package var added: Int
    package var changed: Int
    package var removed: Int
    package var seconds: Double
    /// Whether the store was packed afterwards (nil: not tried).
    package var packed: Packing?

    package enum Packing: Sendable, Hashable {
        case packed(before: Int, after: Int)
        /// Why it could not be (the import itself stands).
        case notPacked(String)
    }

    package init(
        source: String, imported: Int = 0, alreadyImported: Int = 0, failed: Int = 0, failures: [String] = [], bytes: Int = 0,
        backfilled: Bool = false, added: Int = 0, changed: Int = 0, removed: Int = 0, seconds: Double = 0
    ) {
        self.source = source; self.imported = imported; self.alreadyImported = alreadyImported; self.failed = failed; self.failures = failures
        self.bytes = bytes; self.backfilled = backfilled; self.added = added; self.changed = changed; self.removed = removed; self.seconds = seconds
    }
}
