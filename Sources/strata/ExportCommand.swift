import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a source to SQLite, HAR or WARC, or the event log as NDJSON or CloudEvents.",
        discussion: reflowed(
            """
            --sqlite writes the source's items and every version (list entries and details, in the
            order they were observed) into a SQLite file that Datasette and sqlite-utils open as it is:
            tables items, item_versions, item_changes and strata_export (see docs/cli.md). The file is
            replaced whole.

            --events streams the log, oldest first, one JSON event per line: the log's own form
            (ndjson) or CloudEvents 1.0 (cloudevents). --since SEQ starts after that seq, so a
            pipeline resumes from the last `strataseq` (or `seq`) it stored.

            --har and --warc write every exchange of the source up to --as-of, oldest first: recorded
            ones (strata proxy, imports) as they were, fetched list pages, details and images as the
            GETs they were (a 304 as a WARC revisit). WARC files get a warcinfo record, then each
            response with its request, WARC-Date the observed time, WARC-Payload-Digest, each record
            its own gzip member; web-archive players (pywb) replay them.

            Examples:
              strata export cars --sqlite cars.db
              strata export cars --warc cars.warc.gz --as-of 2026-03-01T00:00:00Z
              strata export shop --har shop.har
              strata export cars --sqlite cars-2025.db --as-of 2025-12-31T23:59:59Z
              strata export --events --format cloudevents --since 1200 --payloads
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source to export (with --sqlite).") var name: String?
    @Option(help: ArgumentHelp("Write the source into this SQLite file.", valueName: "file")) var sqlite: String?
    @Option(help: ArgumentHelp("Write the source's exchanges (fetched or recorded) as a HAR 1.2 file.", valueName: "file")) var har: String?
    @Option(help: ArgumentHelp("Write them as WARC 1.1 (gzip per record; .warc for plain).", valueName: "file")) var warc: String?
    @Option(help: "With --sqlite, --har or --warc: as of this seq or ISO 8601 date.") var asOf: PointArgument?
    @Flag(help: "Stream the event log instead.") var events = false
    @Option(help: "With --events: ndjson or cloudevents.") var format: EventFormat = .ndjson
    @Option(help: "With --events: only events after this seq.") var since: UInt64 = 0
    @Flag(help: "With --events: include each event's payload in the event.") var payloads = false

    enum EventFormat: String, ExpressibleByArgument, CaseIterable { case ndjson, cloudevents }

    func validate() throws {
        if events {
            guard sqlite == nil, har == nil, warc == nil, name == nil, asOf == nil else {
                throw ValidationError("--events exports the whole log: no NAME, --sqlite, --har, --warc or --as-of")
            }
        } else {
            guard let name, !name.isEmpty else { throw ValidationError("give a source NAME and --sqlite, --har or --warc FILE, or --events") }
            guard [sqlite, har, warc].compactMap({ $0 }).count == 1 else {
                throw ValidationError("give one of --sqlite FILE, --har FILE or --warc FILE (or --events for the log)")
            }
            guard !payloads, since == 0 else { throw ValidationError("--since and --payloads go with --events") }
        }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            if events { return try await streamEvents(app) }
            guard let name else { return }
            let point = asOf.flatMap { PointInTime(text: $0.text) } ?? .now
            if let file = har ?? warc {
                let format: TrafficFormat = har != nil ? .har : .warc
                let r = try await useCase { try await app.useCases.exportTraffic(name, format: format, to: file, at: point) }
                var line = "\(name): \(r.exchanges) exchange\(r.exchanges == 1 ? "" : "s") through seq \(r.throughSeq)"
                if format == .warc { line += ", \(r.records) records" }
                if r.failures > 0 { line += format == .har ? ", \(r.failures) without an answer (status 0)" : ", \(r.failures) without an answer left out" }
                emit(line + " → \(file) (\(byteCount(r.bytes)))")
                return
            }
            guard let sqlite else { return }
            do {
                let r = try await app.useCases.export.sqlite(name, to: sqlite, at: point)
                emit("\(name): \(r.items) items, \(r.versions) versions, \(r.changes) field changes, \(r.columns) field columns → \(sqlite)")
            } catch let e as RepositoryError {
                throw CLIError(e.cliMessage, exit: e.code == .notFound ? ExitCodes.notFound : .failure)
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
                    value = JSONValue(entry: e, body: body)
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
