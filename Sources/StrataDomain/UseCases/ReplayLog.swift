/// Reads the log itself: events in order, and points of time resolved to seqs.
package struct ReplayLog: Sendable {
    let log: any EventLogRepository

    package init(log: any EventLogRepository) { self.log = log }

    /// - Throws: ``RepositoryError`` `invalidQuery` for a non-positive limit or an empty range.
    package func callAsFunction(_ query: LogQuery) async throws -> [LogEntry] {
        guard query.limit > 0 else { throw RepositoryError(.invalidQuery, "the limit must be positive") }
        guard query.fromSeq <= query.toSeq else { throw RepositoryError(.invalidQuery, "the first seq must not be after the last") }
        return try await log.entries(query)
    }

    /// The seq a point stands for.
    package func resolve(_ point: PointInTime) async throws -> UInt64 {
        try await log.resolve(point)
    }
}
