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
        let source = try await sources.source(named: name)
        var low: UInt64 = 0
        if let from { low = try await log.resolve(from) }
        let high = try await log.resolve(to)
        guard low <= high else { throw RepositoryError(.invalidQuery, "the span starts at seq \(low), after its end (seq \(high))") }
        let page = try await items.items(ItemQuery(source: name, at: .seq(high), includeRemoved: true))
        var out: [ItemChange] = []
        for item in page.items {
            let versions = try await items.history(source: name, id: item.id, upTo: .seq(high))
            var previous: JSONValue?
            for v in versions {
                let after: JSONValue? = v.kind == .removed ? nil : v.document
                defer { previous = after ?? previous }
                guard v.seq > low, filter.kinds.contains(v.kind) else { continue }
                if !filter.fields.isEmpty, !v.changes.contains(where: { c in filter.fields.contains { c.touches($0) } }) { continue }
                // Added or back after a removal: absent just before, so every `old.` field is null.
                let before = v.kind == .added || v.kind == .reappeared ? nil : previous
                guard filter.when.allSatisfy({ $0.matches(new: after, old: before) }) else { continue }
                out.append(
                    ItemChange(
                        item: item.id, title: item.title, seq: v.seq, observedAt: v.recordedAt, kind: v.kind, changes: v.changes, after: after,
                        before: before))
            }
        }
        out.sort { ($0.observedAt, $0.seq) != ($1.observedAt, $1.seq) ? ($0.observedAt, $0.seq) < ($1.observedAt, $1.seq) : Item.idPrecedes($0.item, $1.item) }
        if let limit = filter.limit { out = Array(out.prefix(limit)) }
        return (source, out)
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
