package import Foundation
package import StrataJSON

/// How a version of an item came to be.
package enum ChangeKind: String, Sendable, Hashable, CaseIterable, Codable {
    case added, changed, removed, reappeared
}

/// One version of an item: when, by which event and fetch, and what changed field by field.
package struct ItemVersion: Sendable, Hashable {
    package var version: Int
    package var seq: UInt64
    package var recordedAt: Date
    package var kind: ChangeKind
    /// The fetch run whose event produced this version (nil for imports without one).
    package var run: String?
    /// The event type that produced it (`CollectionPageFetched`, `FetchCompleted`, ...).
    package var eventType: String?
    /// Field-level changes from the previous version (empty for added and removed).
    package var changes: [Change]
    /// The item at this version; for a removal, the last state before it.
    package var document: JSONValue
    /// Which document changed: the item's entry in the list, or its detail.
    package var origin: Origin
    /// Imported with a date of its own: observed at `recordedAt`, stored later.
    package var backfilled: Bool
    /// Why this version only stored values again, redacted anew (a path added, the key rotated):
    /// no change of the API's data. Nil for every other version.
    package var restored: String?

    /// A local version (written here): who wrote it and what became of the write.
    package var local: LocalWrite?

    package enum Origin: String, Sendable, Hashable, Codable { case list, detail, local }

    package init(
        version: Int, seq: UInt64, recordedAt: Date, kind: ChangeKind, run: String? = nil, eventType: String? = nil,
        changes: [Change] = [], document: JSONValue, origin: Origin = .list, backfilled: Bool = false
    ) {
        self.version = version; self.seq = seq; self.recordedAt = recordedAt; self.kind = kind; self.run = run
        self.eventType = eventType; self.changes = changes; self.document = document; self.origin = origin; self.backfilled = backfilled
    }
}
