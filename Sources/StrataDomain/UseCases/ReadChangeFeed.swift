package import Foundation

/// One change of one item, as a feed shows it.
package struct FeedEntry: Sendable, Hashable {
    package var source: String
    package var item: ItemDiff
    /// The event of the pass that recorded the change, and when that pass observed it.
    package var seq: UInt64
    package var observedAt: Date
}

/// A source's changes, newest first, pass by pass: each pass over the list (`FetchCompleted`)
/// against the pass before it. For feeds (`GET /_strata/feeds/SOURCE.atom`).
package struct ReadChangeFeed: Sendable {
    let log: any EventLogRepository
    let items: any ItemRepository
    let sources: any SourceRepository

    package init(log: any EventLogRepository, items: any ItemRepository, sources: any SourceRepository) {
        self.log = log
        self.items = items
        self.sources = sources
    }

    /// At most `limit` entries, of the passes up to `point`; an item changed by several passes has
    /// an entry for each.
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` for a limit
    ///   below 1 or a point after the head.
    package func callAsFunction(source: String, limit: Int = 50, upTo point: PointInTime = .now) async throws -> [FeedEntry] {
        guard limit > 0 else { throw RepositoryError(.invalidQuery, "the limit must be at least 1") }
        _ = try await sources.source(named: source)
        var out: [FeedEntry] = []
        var toSeq = point == .now ? UInt64.max : try await log.resolve(point)
        // Passes newest first, a page of them at a time; each against the one before it.
        while out.count < limit {
            let passes = try await log.entries(LogQuery(stream: source, type: "FetchCompleted", toSeq: toSeq, limit: 64, newestFirst: true))
            guard !passes.isEmpty else { break }
            for (i, pass) in passes.enumerated() where out.count < limit {
                let before: UInt64
                if i + 1 < passes.count {
                    before = passes[i + 1].seq
                } else {
                    let older = try await log.entries(LogQuery(stream: source, type: "FetchCompleted", toSeq: pass.seq - 1, limit: 1, newestFirst: true))
                    before = older.first?.seq ?? 0
                }
                let diff = try await items.diff(source: source, from: .seq(before), to: .seq(pass.seq))
                for d in diff.items.sorted(by: { Item.idPrecedes($0.id, $1.id) }) where out.count < limit {
                    out.append(FeedEntry(source: source, item: d, seq: pass.seq, observedAt: pass.recordedAt))
                }
            }
            guard let oldest = passes.last, oldest.seq > 1 else { break }
            toSeq = oldest.seq - 1
        }
        return out
    }
}
