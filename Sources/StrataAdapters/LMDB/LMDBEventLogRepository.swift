package import StrataDomain
package import EventStore
import Foundation
import StrataData
import StrataJSON

/// ``EventLogRepository`` over the engine's ``EventLog`` interface: the store's LMDB log, or
/// (`strata log --remote NAME`) a team log on PostgreSQL, read the same way.
package struct LMDBEventLogRepository: EventLogRepository {
    let store: any EventLog

    package init(store: EventStore) { self.store = store }

    package init(log: any EventLog) { self.store = log }

    package func entries(_ query: LogQuery) async throws -> [LogEntry] {
        try await storage {
            try await store.events(
                EventQuery(
                    stream: query.stream, type: query.type, fromSeq: query.fromSeq, toSeq: query.toSeq,
                    limit: query.limit, descending: query.newestFirst))
        }.map(LogEntry.init(event:))
    }

    package func resolve(_ point: PointInTime) async throws -> UInt64 {
        let head = try await storage { try await store.head().seq }
        switch point {
        case .now:
            return head
        case .seq(let s):
            guard s <= head else { throw RepositoryError(.invalidQuery, "seq \(s) is after the newest event (\(head))", next: .readLog) }
            return s
        case .date(let d):
            return try await storage { try await store.seq(asOf: Timestamp(d)) }
        }
    }

    package func body(sha256: String) async throws -> [UInt8]? {
        try await storage { try await store.body(sha256: sha256) }
    }

    package func shownPayload(of entry: LogEntry) async throws -> [UInt8]? {
        guard let sha = entry.payloadSHA256, let body = try await body(sha256: sha) else { return nil }
        // Its digest then no longer matches; the log itself keeps it until the source is forgotten.
        guard entry.type == DataEvents.sourceDefined || entry.type == DataEvents.sourceChanged,
            let definition = try? JSONDecoder().decode(SourceDefinition.self, from: Data(body)),
            !definition.literalSecretHeaders.isEmpty
        else { return body }
        return definition.masked.json.canonicalBytes
    }
}
