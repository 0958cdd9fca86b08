import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataPresentation
import StrataJSON

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Append one event to the log (for imports, scripts and tests).",
        discussion: reflowed(
            """
            The payload is read from a file (or - for stdin) and stored once by its SHA-256.
            Giving --id makes the append idempotent: recording the same id again changes nothing.

            Built-in document events, folded by the `documents` projection:
              DocumentRecorded  payload: a JSON document; --meta collection=C --meta key=K
              DocumentRemoved   no payload;               --meta collection=C --meta key=K
              SnapshotRecorded  payload: {"key": document, ...}, the complete collection; --meta collection=C

            Examples:
              strata record --stream cars --type SnapshotRecorded --meta collection=cars --payload cars.json
              strata record --stream cars --type DocumentRemoved --meta collection=cars --meta key=42 --id rm-42
            """)
    )

    @OptionGroup var location: StoreLocation
    @Option(help: "The stream, e.g. a source name.") var stream: String
    @Option(help: "The event type tag, a past-tense fact.") var type: String
    @Option(help: "A deterministic id (default: random).") var id: String?
    @Option(help: "The payload's schema version.") var schemaVersion = 1
    @Option(help: ArgumentHelp("Metadata, repeatable.", valueName: "key=value")) var meta: [String] = []
    @Option(help: ArgumentHelp("A file holding the payload, or - for stdin.", valueName: "file")) var payload: String?
    @Option(help: "When the fact happened (ISO 8601); default now.") var recordedAt: String?
    @Option(help: "table or json.") var format: OutputFormat = .table

    func validate() throws {
        for m in meta where !m.contains("=") { throw ValidationError("--meta takes key=value, got '\(m)'") }
        if let recordedAt, LogTime(iso8601: recordedAt) == nil {
            throw ValidationError("--recorded-at takes an ISO 8601 date or date-time, e.g. 2026-11-22T08:00:00Z")
        }
    }

    func run() async throws {
        try await reportingErrors {
            var body: [UInt8]?
            if let payload {
                if payload == "-" {
                    body = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
                } else {
                    guard let d = FileManager.default.contents(atPath: payload) else {
                        throw CLIError("cannot read the payload file \(payload); check the path")
                    }
                    body = [UInt8](d)
                }
            }
            let metadata = meta.map { m -> (key: String, value: String) in
                let i = m.firstIndex(of: "=")!
                return (String(m[..<i]), String(m[m.index(after: i)...]))
            }
            let outcome = try await location.app().useCases.maintenance.record(
                NewLogEntry(
                    id: id, type: type, schemaVersion: schemaVersion, recordedAt: recordedAt.flatMap(LogTime.init(iso8601:)),
                    stream: stream, metadata: metadata, payload: body))
            if format == .table {
                emit(
                    outcome.appended
                        ? "recorded seq \(outcome.seq) (id \(outcome.id))" : "already recorded as seq \(outcome.seq) (id \(outcome.id)); nothing changed")
            } else {
                emit(outcome.json.prettyString)
            }
        }
    }
}
