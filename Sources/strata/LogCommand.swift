import ArgumentParser
import EventStore

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List events, newest first.",
        discussion: """
        Examples:
          strata log --limit 20
          strata log --stream cars --type SnapshotRecorded --format json
          strata log --since 100 --oldest-first --format ndjson
        """
    )

    @OptionGroup var location: StoreLocation
    @Option(help: "Only events of this stream.") var stream: String?
    @Option(help: "Only events of this type.") var type: String?
    @Option(help: "Only events with seq ≥ this.") var since: UInt64?
    @Option(help: "Only events with seq ≤ this.") var until: UInt64?
    @Option(help: "At most this many events.") var limit = 50
    @Flag(help: "Oldest first instead of newest first.") var oldestFirst = false
    @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
        if let since, let until, since > until { throw ValidationError("--since must not be after --until") }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await location.open()
            let events = try await store.events(EventQuery(
                stream: stream, type: type, fromSeq: since ?? 1, toSeq: until ?? .max, limit: limit, descending: !oldestFirst))
            switch format {
            case .json, .ndjson:
                emit(events.map(\.json), as: format)
            case .table:
                if events.isEmpty { emit("no events"); return }
                var t = TextTable(headers: ["SEQ", "RECORDED", "TYPE", "STREAM", "PAYLOAD", "HASH", "METADATA"])
                for e in events {
                    t.rows.append([
                        String(e.seq), e.recordedAt.iso8601, e.type, e.stream,
                        e.payload.map { byteCount($0.size) } ?? "-", String(e.hash.hexString.prefix(12)),
                        e.metadata.map { "\($0.key)=\($0.value)" }.joined(separator: " "),
                    ])
                }
                emit(t.render())
            }
        }
    }
}

