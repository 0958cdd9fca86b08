package import Foundation
package import StrataJSON

/// One change of one item in the history: a version with what it changed, the item after it and
/// before it.
package struct ItemChange: Sendable, Hashable {
    package var item: String
    package var title: String
    package var seq: UInt64
    package var observedAt: Date
    package var kind: ChangeKind
    package var changes: [Change]
    /// The item after the change (nil once removed) and before it (nil before it was added).
    package var after: JSONValue?
    package var before: JSONValue?

    package init(
        item: String, title: String, seq: UInt64, observedAt: Date, kind: ChangeKind, changes: [Change], after: JSONValue?, before: JSONValue?
    ) {
        self.item = item; self.title = title; self.seq = seq; self.observedAt = observedAt; self.kind = kind; self.changes = changes
        self.after = after; self.before = before
    }
}

/// Questions about the history itself: every item change in a span, filtered by an expression
/// over the item after and before each change (`changes --when`), by the fields it touched, by
/// kind; and which fields churn (`schema --changes`).
package struct ReadChanges: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository
    let log: any EventLogRepository

    package init(items: any ItemRepository, sources: any SourceRepository, log: any EventLogRepository) {
        self.items = items
        self.sources = sources
        self.log = log
    }

    /// What to keep of the span's changes.
    package struct Filter: Sendable {
        package var when: [ItemExpression] = []
        /// Dotted paths or JSON Pointers: a change touching one of them.
        package var fields: [String] = []
        package var kinds: Set<ChangeKind> = Set(ChangeKind.allCases)
        package var limit: Int?

        package init() {}
    }

    /// The changes after `from` up to `to`, oldest first in observed order (as `history` orders a
    /// backfilled source's versions), that pass `filter`.
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` for a point
    ///   after the head.
    package func callAsFunction(source name: String, from: PointInTime?, to: PointInTime = .now, filter: Filter = Filter()) async throws -> (
        source: Source, changes: [ItemChange]
    ) {
        var out: [ItemChange] = []
        let source = try await each(source: name, from: from, to: to, filter: filter) { out.append($0) }
        return (source, out)
    }

    /// The same, each change handed to `body` as soon as it is read: the first comes after the
    /// span's first match, not after the whole span. Returns the source.
    @discardableResult
    package func each(
        source name: String, from: PointInTime?, to: PointInTime = .now, filter: Filter = Filter(), _ body: (ItemChange) async throws -> Void
    ) async throws -> Source {
        let source = try await sources.source(named: name)
        var low: UInt64 = 0
        if let from { low = try await log.resolve(from) }
        let high = try await log.resolve(to)
        guard low <= high else { throw RepositoryError(.invalidQuery, "the span starts at seq \(low), after its end (seq \(high))") }
        if filter.limit == 0 { return source }
        // Kinds the expressions cannot hold for are not even read: an addition has no `old.`.
        var kinds = filter.kinds
        if !filter.when.allSatisfy({ $0.canHold(absent: true) }) { kinds.subtract([.added, .reappeared]) }
        if !filter.when.allSatisfy({ $0.canHold(absent: false) }) { kinds.remove(.removed) }
        guard !kinds.isEmpty else { return source }
        var count = 0
        let when = filter.when
        // The expressions are checked where the versions are read, before their field changes
        // are worked out; the fields after.
        let matching: @Sendable (JSONValue?, JSONValue?) -> Bool = { after, before in when.allSatisfy { $0.matches(new: after, old: before) } }
        for try await batch in items.changes(source: name, after: low, upTo: high, kinds: kinds, matching: matching) {
            for change in batch {
                if !filter.fields.isEmpty, !change.changes.contains(where: { c in filter.fields.contains { c.touches($0) } }) { continue }
                try await body(change)
                count += 1
                if let limit = filter.limit, count >= limit { return source }
            }
        }
        return source
    }

    /// Per field path, how many changes of existing items touched it in the span (additions and
    /// removals not counted), most first: the fields that churn.
    package func churn(source name: String, from: PointInTime?, to: PointInTime = .now) async throws -> [(path: String, changes: Int)] {
        var filter = Filter()
        filter.kinds = [.changed, .reappeared]
        let (_, changes) = try await self(source: name, from: from, to: to, filter: filter)
        var counts: [String: Int] = [:]
        for change in changes {
            for c in change.changes { counts[c.fieldPath, default: 0] += 1 }
        }
        return counts.map { (path: $0.key, changes: $0.value) }.sorted { $0.changes != $1.changes ? $0.changes > $1.changes : $0.path < $1.path }
    }
}

extension Change {
    /// The dotted field path the change is at, array positions left out (`/specs/0/fuel` is
    /// `specs.fuel`): what `schema --changes` counts by.
    package var fieldPath: String {
        ((try? JSONPointer(path))?.tokens ?? []).filter { !$0.isEmpty && !$0.allSatisfy(\.isNumber) }.joined(separator: ".")
    }
}
