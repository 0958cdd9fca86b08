import Foundation
import StrataJSON

/// Exports a source into SQLite (for Datasette and sqlite-utils), and the event log as a stream
/// (for CloudEvents / Kafka-style pipelines).
package struct ExportSource: Sendable {
    let items: any ItemRepository
    let sources: any SourceRepository
    let log: any EventLogRepository
    let exporter: any ExportRepository

    package init(items: any ItemRepository, sources: any SourceRepository, log: any EventLogRepository, exporter: any ExportRepository) {
        self.items = items
        self.sources = sources
        self.log = log
        self.exporter = exporter
    }

    /// Writes the source's items at `point` (removed ones marked) and every version up to it.
    package func sqlite(_ name: String, to path: String, at point: PointInTime = .now) async throws -> SQLiteExportSummary {
        let source = try await sources.source(named: name)
        let page = try await items.items(ItemQuery(source: name, at: point, includeRemoved: true))
        var withDetails: [Item] = []
        var versions: [String: [ItemVersion]] = [:]
        for item in page.items {
            withDetails.append(try await items.item(source: name, id: item.id, at: point) ?? item)
            versions[item.id] = try await items.history(source: name, id: item.id, upTo: point)
        }
        let label =
            switch point {
            case .now: "now"
            case .seq(let n): "seq \(n)"
            case .date(let d): "observed at \(ISO8601DateFormatter().string(from: d))"
            }
        return try await exporter.writeSQLite(SQLiteExport(source: source, point: label, items: withDetails, versions: versions), to: path)
    }

    /// Events after seq `since`, oldest first, at most `limit`: read page by page to stream the
    /// whole log in bounded memory; resume from the last seq written.
    package func events(after since: UInt64, limit: Int = 1000) async throws -> [LogEntry] {
        try await log.entries(LogQuery(fromSeq: since + 1, limit: limit, newestFirst: false))
    }

    /// A stored body by SHA-256 (an event's payload).
    package func body(sha256: String) async throws -> [UInt8]? {
        try await log.body(sha256: sha256)
    }

    /// An event's payload as an export gives it (``EventLogRepository/shownPayload(of:)``).
    package func payload(of entry: LogEntry) async throws -> [UInt8]? { try await log.shownPayload(of: entry) }
}
