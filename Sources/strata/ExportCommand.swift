import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a source to SQLite, or the event log as NDJSON or CloudEvents.",
        discussion: reflowed(
            """
            --sqlite writes the source's items and every version (list entries and details, in the
            order they were observed) into a SQLite file that Datasette and sqlite-utils open as it is:
            tables items, item_versions, item_changes and strata_export (see docs/cli.md). The file is
            replaced whole.

            --events streams the log, oldest first, one JSON event per line: the log's own form
            (ndjson) or CloudEvents 1.0 (cloudevents). --since SEQ starts after that seq, so a
            pipeline resumes from the last `strataseq` (or `seq`) it stored.

            Examples:
              strata export cars --sqlite cars.db
              strata export cars --sqlite cars-2025.db --as-of 2025-12-31T23:59:59Z
              strata export --events --format cloudevents --since 1200 --payloads
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source to export (with --sqlite).") var name: String?
    @Option(help: ArgumentHelp("Write the source into this SQLite file.", valueName: "file")) var sqlite: String?
    @Option(help: "With --sqlite: items as of this seq or ISO 8601 date (versions up to it).") var asOf: PointArgument?
    @Flag(help: "Stream the event log instead.") var events = false
    @Option(help: "With --events: ndjson or cloudevents.") var format: EventFormat = .ndjson
    @Option(help: "With --events: only events after this seq.") var since: UInt64 = 0
    @Flag(help: "With --events: include each event's payload in the event.") var payloads = false

    enum EventFormat: String, ExpressibleByArgument, CaseIterable { case ndjson, cloudevents }

    func validate() throws {
        if events {
            guard sqlite == nil, name == nil, asOf == nil else { throw ValidationError("--events exports the whole log: no NAME, --sqlite or --as-of") }
        } else {
            guard let name, !name.isEmpty else { throw ValidationError("give a source NAME and --sqlite FILE, or --events") }
            guard sqlite != nil else { throw ValidationError("give --sqlite FILE (or --events for the log)") }
            guard !payloads, since == 0 else { throw ValidationError("--since and --payloads go with --events") }
        }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            if events { return try await streamEvents(app) }
            guard let name, let sqlite else { return }
            let point = asOf.flatMap { PointInTime(text: $0.text) } ?? .now
            do {
                let r = try await app.useCases.export.sqlite(name, to: sqlite, at: point)
                emit("\(name): \(r.items) items, \(r.versions) versions, \(r.changes) field changes, \(r.columns) field columns → \(sqlite)")
            } catch let e as RepositoryError {
                throw CLIError(e.message, exit: e.code == .notFound ? ExitCodes.notFound : .failure)
            }
        }
    }

    private func streamEvents(_ app: StrataApp) async throws {
        var after = since
        let out = FileHandle.standardOutput
        while true {
            let page = try await app.useCases.export.events(after: after)
            guard !page.isEmpty else { break }
            var text = ""
            for e in page {
                var body: [UInt8]?
                if payloads { body = try await app.useCases.export.payload(of: e) }
                let value: JSONValue
                switch format {
                case .ndjson:
                    guard case .object(var fields) = JSONValue(entry: e) else { continue }
                    if let body { fields["payload"] = (try? JSONValue(parsing: body)) ?? .string(Data(body).base64EncodedString()) }
                    value = .object(fields)
                case .cloudevents:
                    value = JSONValue(cloudEvent: e, store: location.path, payload: body)
                }
                text += value.canonicalString + "\n"
            }
            out.write(Data(text.utf8))
            after = page.last!.seq
        }
    }
}
