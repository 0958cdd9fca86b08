import ArgumentParser
import EventStore
import Foundation
import StrataData

struct SourceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "source",
        abstract: "Define the APIs Strata mirrors.",
        subcommands: [Add.self, List.self, Show.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Define (or with --replace change) a source.",
            discussion: """
            Paths are dotted JSON paths into the response (results, data.items, sprites.front_default).

            Examples:
              strata source add cars --url http://127.0.0.1:8080/cars/offers --items results --title make \\
                  --subtitle model --image image --page-param page --page-size 10 --index make --index model
              strata source add notes --url https://example.firebaseio.com/notes.json --id @key --title content
              strata source add pokedex --url http://127.0.0.1:8080/pokedex/pokemon --items results --id name \\
                  --detail-url-field url --image sprites.front_default
              strata source add private --url https://api.example.com/items --header 'Authorization: Bearer $API_TOKEN'
            """
        )
        @OptionGroup var location: StoreLocation
        @Argument(help: "The source's name.") var name: String
        @Option(help: "The list endpoint.") var url: String
        @Option(help: "Path to the items (array, or object keyed by id); default: the body.") var items: String?
        @Option(help: "Id path(s), comma-separated for composite ids; @key for object maps.") var id = "id"
        @Option(help: "Path of the title field.") var title: String?
        @Option(help: "Path of a subtitle field (repeatable).") var subtitle: [String] = []
        @Option(help: "Path of the image URL (in the item or its detail).") var image: String?
        @Option(help: "Detail URL template with {id}.") var detailUrl: String?
        @Option(help: "Path of a detail URL field in the item (may be relative).") var detailUrlField: String?
        @Option(help: "Path of the next page's URL in the body.") var next: String?
        @Option(help: "Page-number parameter name.") var pageParam: String?
        @Option(help: "Page-size parameter name.") var sizeParam = "size"
        @Option(help: "Items per page.") var pageSize: Int?
        @Option(help: "Field path(s) to index, comma-separated or repeated.") var index: [String] = []
        @Option(help: ArgumentHelp("A request header (repeatable); $VAR reads the environment at fetch time.", valueName: "Name: value")) var header: [String] = []
        @Flag(help: "Change an existing source.") var replace = false

        func run() async throws {
            try await reportingErrors {
                let def = SourceDefinition(
                    name: name, url: url, items: items, id: id.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) },
                    title: title, subtitle: subtitle, image: image, detailURL: detailUrl, detailURLField: detailUrlField, next: next,
                    pageParam: pageParam, sizeParam: sizeParam, pageSize: pageSize,
                    index: index.flatMap { $0.split(separator: ",").map(String.init) }, headers: header)
                do throws(FetchError) { try def.validate() } catch { throw ValidationError(error.message) }
                let store = try await location.open()
                let outcome = try await SourceCatalog(store: store).define(def, replace: replace)
                emit("\(replace ? "changed" : "defined") source \(name) (seq \(outcome.seq))")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List sources.")
        @OptionGroup var location: StoreLocation
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let sources = try await SourceCatalog(store: location.open()).all()
                switch format {
                case .json, .ndjson: emit(sources.map(\.json), as: format)
                case .table:
                    if sources.isEmpty { emit("no sources; add one with `strata source add`"); return }
                    var t = TextTable(headers: ["NAME", "URL", "ITEMS", "ID", "DETAIL", "IMAGE"])
                    for s in sources {
                        t.rows.append([s.name, s.url, s.items ?? "(body)", s.id.joined(separator: ","), s.detailURL ?? s.detailURLField ?? "-", s.image ?? "-"])
                    }
                    emit(t.render())
                }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a source's definition.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                guard let s = try await SourceCatalog(store: location.open()).get(name) else {
                    throw CLIError("no source named \(name); see `strata source list`", exit: ExitCodes.notFound)
                }
                emit(s.json.prettyString)
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a source (its history stays in the log).")
        @OptionGroup var location: StoreLocation
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                do { try await SourceCatalog(store: location.open()).remove(name) } catch let e as FetchError {
                    throw CLIError(e.message, exit: ExitCodes.notFound)
                }
                emit("removed source \(name)")
            }
        }
    }
}

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch sources into the store (all when none is named).",
        discussion: """
        Every response, 304 and failed attempt becomes an event. Items are removed only after a
        complete, successful pass over all pages. Exits 1 if any source failed.

        Examples:
          strata fetch
          strata fetch cars --details --images --concurrency 8
        """
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "Source names.") var names: [String] = []
    @Flag(help: "Fetch the detail document of new and changed items.") var details = false
    @Flag(help: "Fetch each item's image once.") var images = false
    @Option(help: "Detail/image requests in flight.") var concurrency = 8
    @Option(help: "At most this many list pages (an incomplete pass removes nothing).") var limit: Int?
    @Option(help: "Seconds allowed per request.") var timeout: Double = 30
    @Option(help: "Largest body accepted, bytes.") var maxBytes = 64 << 20
    @Option(help: "Extra attempts after a retryable failure.") var retries = 3
    @Flag(name: .customLong("insecure-skip-tls-verify"), help: "DANGEROUS: do not verify TLS certificates.") var insecure = false

    func validate() throws {
        guard concurrency >= 1, concurrency <= 64 else { throw ValidationError("--concurrency must be 1–64") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard maxBytes > 0 else { throw ValidationError("--max-bytes must be positive") }
        guard retries >= 0, retries <= 10 else { throw ValidationError("--retries must be 0–10") }
        if let limit, limit < 1 { throw ValidationError("--limit must be positive") }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await location.open()
            let catalog = SourceCatalog(store: store)
            var sources = try await catalog.all()
            if !names.isEmpty {
                for n in names where !sources.contains(where: { $0.name == n }) {
                    throw CLIError("no source named \(n); see `strata source list`", exit: ExitCodes.notFound)
                }
                sources = names.compactMap { n in sources.first { $0.name == n } }
            }
            if sources.isEmpty { throw CLIError("no sources to fetch; add one with `strata source add`") }
            var config = CurlHTTPClient.Configuration(userAgent: "Strata/\(Strata.version)")
            config.insecureSkipTLSVerify = insecure
            if insecure { FileHandle.standardError.write(Data("warning: TLS certificate verification is OFF\n".utf8)) }
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(configuration: config), logger: location.logger())
            var options = FetchOptions()
            options.details = details
            options.images = images
            options.concurrency = concurrency
            options.pageLimit = limit
            options.timeout = timeout
            options.maxBytes = maxBytes
            options.retries = retries
            let line = FetchProgressLine()
            options.progress = { line.show($0) }
            var failed = false
            for s in sources {
                do {
                    let r = try await fetcher.fetch(s, options: options)
                    line.clear()
                    emit(r.line)
                    for f in r.failures.prefix(10) { FileHandle.standardError.write(Data("Error: source \(s.name): \(f)\n".utf8)) }
                    if !r.failures.isEmpty { failed = true }
                } catch let e as FetchError {
                    line.clear()
                    FileHandle.standardError.write(Data("Error: source \(s.name): \(e.message) (\(e.url))\n".utf8))
                    failed = true
                }
            }
            if failed { throw ExitCode.failure }
        }
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Record local JSON files as complete snapshots of a source's list.",
        discussion: """
        Each file goes through the same validation and events as a fetched list, so history can be
        backfilled (e.g. from a git-scraping repository) with its real dates.

        Example:
          strata import cars snapshots/2025-01-01.json --recorded-at 2025-01-01T00:00:00Z
        """
    )
    @OptionGroup var location: StoreLocation
    @Argument var name: String
    @Argument(help: "JSON files, imported in order.") var files: [String]
    @Option(help: "When the snapshots were taken (ISO 8601); default now.") var recordedAt: String?

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
        if let recordedAt, Timestamp(iso8601: recordedAt) == nil { throw ValidationError("--recorded-at takes an ISO 8601 date-time") }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await location.open()
            guard let source = try await SourceCatalog(store: store).get(name) else {
                throw CLIError("no source named \(name); see `strata source list`", exit: ExitCodes.notFound)
            }
            var bodies: [(path: String, body: [UInt8])] = []
            for f in files {
                guard let d = FileManager.default.contents(atPath: f) else { throw CLIError("cannot read \(f); check the path") }
                bodies.append((f, [UInt8](d)))
            }
            do {
                let r = try await Fetcher(store: store, client: CurlHTTPClient()).importSnapshots(source, files: bodies, recordedAt: recordedAt.flatMap(Timestamp.init(iso8601:)))
                emit(r.line)
            } catch let e as FetchError {
                throw CLIError("source \(name): \(e.message) (\(e.url))")
            }
        }
    }
}

extension FetchSummary {
    /// The one-line summary.
    var line: String {
        var parts = ["\(source): \(pages) page\(pages == 1 ? "" : "s")"]
        if pagesNotModified > 0 { parts[0] += " (\(pagesNotModified) not modified)" }
        parts.append("+\(added) added, ~\(changed) changed, -\(removed) removed" + (reappeared > 0 ? ", \(reappeared) reappeared" : ""))
        if details + detailsNotModified > 0 { parts.append("\(details) details" + (detailsNotModified > 0 ? " (\(detailsNotModified) not modified)" : "")) }
        if images > 0 { parts.append("\(images) images") }
        parts.append(byteCount(bytes))
        parts.append(String(format: "%.2f s", seconds))
        if !complete { parts.append("incomplete pass: nothing removed") }
        return parts.joined(separator: ", ")
    }
}

/// A progress line on stderr while fetching, only when stderr is a terminal.
final class FetchProgressLine: @unchecked Sendable {
    private let enabled = isatty(STDERR_FILENO) == 1
    private let lock = NSLock()
    private var last = Date.distantPast
    private var shown = false

    func show(_ p: FetchProgress) {
        guard enabled else { return }
        lock.lock(); defer { lock.unlock() }
        let now = Date()
        guard now.timeIntervalSince(last) > 0.08 || p.done == p.total else { return }
        last = now
        shown = true
        var text = "\(p.source): \(p.stage.rawValue) \(p.done)"
        if let total = p.total, total > 0 {
            let width = 24, filled = min(width, p.done * width / total)
            text += "/\(total) [" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]"
        } else {
            text += " page\(p.done == 1 ? "" : "s")"
        }
        FileHandle.standardError.write(Data("\r\(text)\u{1B}[K".utf8))
    }

    func clear() {
        lock.lock(); defer { lock.unlock() }
        if shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        shown = false
    }
}
