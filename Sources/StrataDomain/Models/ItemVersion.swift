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

extension ItemVersion {
    /// A version's place in its item's history, without what it holds.
    package struct Mark: Sendable, Hashable {
        package var version: Int
        package var seq: UInt64
        package var recordedAt: Date
        package var kind: ChangeKind
        package var origin: Origin

        package init(_ v: ItemVersion) {
            version = v.version; seq = v.seq; recordedAt = v.recordedAt; kind = v.kind; origin = v.origin
        }
    }
}

/// Which versions of an item's history a page shows in full: the newest `limit` before seq
/// `before` (the newest of all when nil), and the version in force at each seq of `at` (a
/// comparison's two ends).
package struct HistoryPage: Sendable, Hashable {
    package var before: UInt64?
    package var limit: Int
    package var at: [UInt64]

    package init(before: UInt64? = nil, limit: Int, at: [UInt64] = []) {
        self.before = before; self.limit = limit; self.at = at
    }

    /// Where its newest `limit` versions below `before` are among `sorted` (every version's seq,
    /// ascending).
    package func window(in sorted: [UInt64]) -> Range<Int> {
        let end = before.map { b in sorted.firstIndex { $0 >= b } ?? sorted.count } ?? sorted.count
        return max(0, end - limit)..<end
    }

    /// The seqs it picks among `seqs` (every version's): by seq, the newest `limit` below
    /// `before`, and for each of `at` the version at it or the last before it.
    package func chosen(among seqs: [UInt64]) -> Set<UInt64> {
        let sorted = seqs.sorted()
        var out = Set(sorted[window(in: sorted)])
        for s in at {
            if let v = sorted.last(where: { $0 <= s }) { out.insert(v) }
        }
        return out
    }
}

/// An item's history as a page shows it: where every version is, and the few it shows in full.
package struct ItemHistoryPage: Sendable, Hashable {
    /// Every version, oldest first in observed order, as the whole history has them.
    package var marks: [ItemVersion.Mark]
    /// The versions the page picked, in full, by their index in `marks`.
    package var versions: [Int: ItemVersion]
    /// What the page asked for.
    package var page: HistoryPage

    package init(marks: [ItemVersion.Mark], versions: [Int: ItemVersion], page: HistoryPage) {
        self.marks = marks; self.versions = versions; self.page = page
    }

    /// The page of a history read whole.
    package init(_ all: [ItemVersion], page: HistoryPage) {
        let chosen = page.chosen(among: all.map(\.seq))
        marks = all.map(ItemVersion.Mark.init)
        versions = Dictionary(uniqueKeysWithValues: all.enumerated().filter { chosen.contains($1.seq) })
        self.page = page
    }

    /// The full version in force at `seq`: at it, or the last before it in the log.
    package func version(at seq: UInt64) -> ItemVersion? {
        versions.values.filter { $0.seq <= seq }.max { ($0.seq, $0.origin.rawValue) < ($1.seq, $1.origin.rawValue) }
    }
}
