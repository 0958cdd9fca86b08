import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataPresentation
import StrataJSON
import Synchronization

struct SourceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "source",
        abstract: "Define the APIs Strata mirrors.",
        subcommands: [Add.self, Change.self, List.self, Show.self, Remove.self]
    )

    /// The write side of a source, for `add` and `change`.
    struct WriteSide: ParsableArguments {
        @Option(help: "Where new items are POSTed (enables `strata create`).") var createUrl: String?
        @Option(help: "An item's URL for updates, with {id} (enables `strata edit`).") var updateUrl: String?
        @Option(help: "PATCH (default) or PUT (the whole item).") var updateMethod: String?
        @Option(help: "PATCH body: json-patch (RFC 6902, default) or merge-patch (RFC 7396).") var patchFormat: String?
        @Option(help: "An item's URL for deletes, with {id} (enables `strata delete`).") var deleteUrl: String?
        @Option(help: "Path of the field naming an item's owner: filled with your user on create, matched by `list --mine`.") var ownerField: String?

        func apply(to d: inout SourceSpec) {
            if let createUrl { d.createURL = createUrl.isEmpty ? nil : createUrl }
            if let updateUrl { d.updateURL = updateUrl.isEmpty ? nil : updateUrl }
            if let updateMethod { d.updateMethod = updateMethod.isEmpty ? nil : updateMethod.uppercased() }
            if let patchFormat { d.patchFormat = patchFormat.isEmpty ? nil : patchFormat }
            if let deleteUrl { d.deleteURL = deleteUrl.isEmpty ? nil : deleteUrl }
            if let ownerField { d.ownerField = ownerField.isEmpty ? nil : ownerField }
        }

        var isEmpty: Bool { [createUrl, updateUrl, updateMethod, patchFormat, deleteUrl, ownerField].allSatisfy { $0 == nil } }
    }

    /// The source's own polling by `strata watch`, for `add` and `change`.
    struct ScheduleOptions: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "Fetch the source every DURATION while `strata watch` runs (30s, 15m, 6h, 1d); on change, '' removes the schedule.", valueName: "duration"))
        var every: String?
        @Option(help: ArgumentHelp("Move each wait by up to this percent either way (0 to 50; default 10 with --every).", valueName: "percent"))
        var jitter: Int?
        @Option(help: ArgumentHelp("What `strata watch` fetches besides the list: all or changed details.", valueName: "all|changed"))
        var watchDetails: String?
        @Flag(help: "`strata watch` fetches each item's image once too.") var watchImages = false

        var isEmpty: Bool { every == nil && jitter == nil && watchDetails == nil && !watchImages }

        func validate() throws {
            if let every, !every.isEmpty, Duration.seconds(parsing: every) == nil {
                throw ValidationError("--every takes a duration like 30s, 15m, 6h or 1d")
            }
            if let watchDetails, !["all", "changed"].contains(watchDetails) { throw ValidationError("--watch-details takes all or changed") }
        }

        /// `schedule` with these options applied; nil when `--every ''` removes it.
        /// - Throws: ``ValidationError`` for settings without an interval to go with.
        func apply(to schedule: SourceSchedule?) throws -> SourceSchedule? {
            if every == "" { return nil }
            var s: SourceSchedule
            if let every, let seconds = Duration.seconds(parsing: every) {
                s = schedule ?? SourceSchedule(every: seconds, jitter: 10)
                s.every = seconds
            } else if let schedule {
                s = schedule
            } else {
                guard isEmpty else { throw ValidationError("--jitter, --watch-details and --watch-images go with --every") }
                return nil
            }
            if let jitter { s.jitter = jitter }
            if let watchDetails { s.details = watchDetails == "changed" ? .changed : .all(maxAge: nil) }
            if watchImages { s.images = true }
            return s
        }
    }

    /// Request headers, for `add` and `change`: templates, files, and literal credentials only
    /// when asked for.
    struct HeaderOptions: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "A request header (repeatable; on change, replaces the set); $VAR reads the environment at fetch time: quote it in single quotes.",
                valueName: "Name: value"))
        var header: [String] = []
        @Option(
            help: ArgumentHelp(
                "A header whose value is a file's text, read at each fetch (repeatable), e.g. 'Authorization=~/.config/gh-auth'.", valueName: "Name=path"))
        var headerFromFile: [String] = []
        @Flag(help: "Accept a literal credential in --header: it is kept outside the log (secrets.json in the store, mode 0600) and never printed or exported.")
        var allowLiteralSecret = false

        var isEmpty: Bool { header.isEmpty && headerFromFile.isEmpty }

        /// `--header` and `--header-from-file` as the definition's header templates.
        func headers() throws -> [String] {
            var out = header
            for h in headerFromFile {
                guard let eq = h.firstIndex(of: "="), eq != h.startIndex, h.index(after: eq) != h.endIndex else {
                    throw ValidationError("--header-from-file '\(h)' must look like Name=PATH, e.g. Authorization=~/.config/gh-auth")
                }
                let name = h[..<eq].trimmingCharacters(in: .whitespaces)
                var path = (String(h[h.index(after: eq)...]) as NSString).expandingTildeInPath
                if !path.hasPrefix("/") { path = FileManager.default.currentDirectoryPath + "/" + path }
                guard FileManager.default.isReadableFile(atPath: path) else { throw ValidationError("--header-from-file: \(path) cannot be read") }
                out.append("\(name): ${file:\(path)}")
            }
            return out
        }
    }

    /// What is kept: `--redact`/`--redact-header` (never stored as it came), `--keep`/`--keep-versions` (retention).
    struct KeepingOptions: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "Field path(s) in each item and detail (or a recorded JSON body) stored only as a keyed placeholder (comma-separated or repeated; replaces the set; '' clears it).",
                valueName: "path"))
        var redact: [String] = []
        @Option(
            help: ArgumentHelp(
                "Header(s) recorded traffic keeps only as a placeholder, beside Authorization, Cookie and the other credentials (replaces the set; '' clears it).",
                valueName: "name"))
        var redactHeader: [String] = []

        @Option(
            help: ArgumentHelp(
                "Keep this much history (30d, 12h, 26w…): older bodies and versions are dropped at `strata compact` ('' keeps everything).",
                valueName: "duration"))
        var keep: String?
        @Option(help: ArgumentHelp("Keep the newest N complete passes; older ones are dropped at `strata compact` (0 keeps everything).", valueName: "n"))
        var keepVersions: Int?

        var isEmpty: Bool { redact.isEmpty && redactHeader.isEmpty && keep == nil && keepVersions == nil }

        func validate() throws {
            if let keep, !keep.isEmpty, Duration.seconds(parsing: keep) == nil { throw ValidationError("--keep takes a duration like 30d, 12h or 26w") }
            if let keepVersions, keepVersions < 0 { throw ValidationError("--keep-versions must be 0 (keep everything) or more") }
            if let keep, !keep.isEmpty, let keepVersions, keepVersions > 0 { throw ValidationError("--keep and --keep-versions are two retentions; pick one") }
        }

        func apply(to spec: inout SourceSpec) {
            if let keep {
                spec.keepSeconds = keep.isEmpty ? nil : Duration.seconds(parsing: keep)
                if !keep.isEmpty { spec.keepVersions = nil }
            }
            if let keepVersions {
                spec.keepVersions = keepVersions == 0 ? nil : keepVersions
                if keepVersions > 0 { spec.keepSeconds = nil }
            }
            let split = { (values: [String]) in values.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } }
            if !redact.isEmpty { spec.redact = split(redact) }
            if !redactHeader.isEmpty { spec.redactHeaders = split(redactHeader) }
        }
    }

    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "change",
            abstract: "Change parts of a source's definition (the rest stays); an empty value removes a setting.",
            discussion: reflowed(
                """
                Examples:
                  strata source change notes --create-url http://127.0.0.1:8080/notes/notes \\
                      --update-url 'http://127.0.0.1:8080/notes/notes/{id}' --delete-url 'http://127.0.0.1:8080/notes/notes/{id}' \\
                      --owner-field created_by
                  strata source change cars --update-method PUT
                  strata source change cars --index make,model --title model
                """)
        )
        @OptionGroup var location: StoreLocation
        @Argument(help: "The source's name.") var name: String
        @OptionGroup var writeSide: WriteSide
        @Option(help: "Path of the title field.") var title: String?
        @Option(help: "Field path(s) to index, comma-separated or repeated (replaces the set).") var index: [String] = []
        @Option(
            help: ArgumentHelp(
                "Field path(s) whose changes alone make no new version, diff or alert (comma-separated or repeated; replaces the set; '' clears it).",
                valueName: "path"))
        var ignore: [String] = []
        @OptionGroup var keeping: KeepingOptions
        @OptionGroup var headerOptions: HeaderOptions
        @OptionGroup var scheduleOptions: ScheduleOptions

        func validate() throws {
            if writeSide.isEmpty && title == nil && index.isEmpty && ignore.isEmpty && keeping.isEmpty && headerOptions.isEmpty
                && scheduleOptions.isEmpty
            {
                throw ValidationError("nothing to change: give at least one option")
            }
        }

        func run() async throws {
            try await reportingErrors {
                let app = try await location.app()
                var def = try await useCase { try await app.useCases.manageSources.definition(name) }
                writeSide.apply(to: &def)
                if let title { def.title = title.isEmpty ? nil : title }
                if !index.isEmpty { def.index = index.flatMap { $0.split(separator: ",").map(String.init) } }
                if !ignore.isEmpty { def.ignore = ignore.flatMap { $0.split(separator: ",").map(String.init) } }
                keeping.apply(to: &def)
                if !headerOptions.isEmpty { def.headers = try headerOptions.headers() }
                if !scheduleOptions.isEmpty { def.schedule = try scheduleOptions.apply(to: def.schedule) }
                let changed = def
                let keep = headerOptions.allowLiteralSecret
                let seq = try await useCase { try await app.useCases.manageSources.define(changed, replace: true, keepingLiteralSecrets: keep) }
                emit("changed source \(name) (seq \(seq))")
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Define (or with --replace change) a source.",
            discussion: reflowed(
                """
                Paths are dotted JSON paths into the response (results, data.items, sprites.front_default).

                Examples:
                  strata source add cars --url http://127.0.0.1:8080/cars/offers --items results --title make \\
                      --subtitle model --image image --page-param page --page-size 10 --index make --index model
                  strata source add notes --url https://example.firebaseio.com/notes.json --id @key --title content
                  strata source add pokedex --url http://127.0.0.1:8080/pokedex/pokemon --items results --id name \\
                      --detail-url-field url --image sprites.front_default
                  strata source add private --url https://api.example.com/items --header 'Authorization: Bearer $API_TOKEN'
                  strata source add feed --url https://api.example.com/v1/items --items data \\
                      --cursor-path meta.next_cursor --cursor-param cursor --page-size 100
                  strata source add rows --url https://api.example.com/rows --items rows --offset-param offset --page-size 50 --total-path total
                  strata source add charges --url https://api.example.com/v1/charges --items data \\
                      --after-param starting_after --has-more-path has_more --page-size 100

                Paging styles (pick one): --next (a URL in the body), a Link header (automatic),
                --page-param/--page-size, --cursor-path/--cursor-param, --offset-param, --after-param.
                """)
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
        @Option(help: "Items per page (the page size, or the value of --limit-param).") var pageSize: Int?
        @Option(help: "Cursor paging: path of the next cursor in the body (e.g. meta.next_cursor).") var cursorPath: String?
        @Option(help: "Cursor paging: the parameter the cursor is sent back in (e.g. cursor).") var cursorParam: String?
        @Option(help: "Offset paging: the offset parameter (e.g. offset); needs --page-size.") var offsetParam: String?
        @Option(help: "Offset paging: path of the total count in the body (e.g. total).") var totalPath: String?
        @Option(help: "The parameter carrying --page-size for cursor, offset and after-id paging (default limit).") var limitParam: String?
        @Option(help: "After-id paging: the parameter given the last item's id (e.g. starting_after).") var afterParam: String?
        @Option(help: "After-id paging: path of the has-more flag (e.g. has_more).") var hasMorePath: String?
        @Option(help: "Field path(s) to index, comma-separated or repeated.") var index: [String] = []
        @Option(help: ArgumentHelp("Field path(s) whose changes alone make no new version, diff or alert (comma-separated or repeated).", valueName: "path"))
        var ignore: [String] = []
        @OptionGroup var keeping: KeepingOptions
        @OptionGroup var headerOptions: HeaderOptions
        @OptionGroup var writeSide: WriteSide
        @OptionGroup var scheduleOptions: ScheduleOptions
        @Flag(help: "Change an existing source.") var replace = false

        func run() async throws {
            try await reportingErrors {
                var def = SourceSpec(
                    name: name, url: url, items: items, id: id.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) },
                    title: title, subtitle: subtitle, image: image, detailURL: detailUrl, detailURLField: detailUrlField, next: next,
                    pageParam: pageParam, sizeParam: sizeParam, pageSize: pageSize,
                    index: index.flatMap { $0.split(separator: ",").map(String.init) }, headers: try headerOptions.headers(),
                    cursorPath: cursorPath, cursorParam: cursorParam, offsetParam: offsetParam, totalPath: totalPath,
                    limitParam: limitParam, afterParam: afterParam, hasMorePath: hasMorePath)
                writeSide.apply(to: &def)
                def.schedule = try scheduleOptions.apply(to: nil)
                def.ignore = ignore.flatMap { $0.split(separator: ",").map(String.init) }
                keeping.apply(to: &def)
                let keep = headerOptions.allowLiteralSecret
                do { try StrataApp.validate(def, keepingLiteralSecrets: keep) } catch let e as RepositoryError {
                    throw ValidationError(e.cliMessage)
                } catch let e as SpecProblem { throw ValidationError(e.worded(\.flag)) }
                let app = try await location.app()
                let seq: UInt64
                do { seq = try await app.useCases.manageSources.define(def, replace: replace, keepingLiteralSecrets: keep) } catch let e as RepositoryError {
                    throw CLIError(e.cliMessage)
                }
                emit("\(replace ? "changed" : "defined") source \(name) (seq \(seq))")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List sources.")
        @OptionGroup var location: StoreLocation
        @Option(help: "table, json or ndjson.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let manage = try await location.app().useCases.manageSources
                let sources = try await manage.all()
                switch format {
                case .json, .ndjson: emit(sources.map(manage.storedForm), as: format)
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
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show a source's definition: a table of its settings, or with --format json the definition as stored.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String
        @Option(help: "table or json.") var format: OutputFormat = .table

        func run() async throws {
            try await reportingErrors {
                let json: JSONValue
                do {
                    let manage = try await location.app().useCases.manageSources
                    json = manage.storedForm(try await manage.definition(name))
                } catch let e as RepositoryError {
                    throw CLIError(e.cliMessage, exit: ExitCodes.notFound)
                }
                switch format {
                case .json, .ndjson: emit(json.prettyString)
                case .table: emit(Self.table(name, json))
                }
            }
        }

        /// One setting a line, in key order: texts as they are, lists joined, objects as JSON.
        static func table(_ name: String, _ json: JSONValue) -> String {
            guard case .object(let o) = json else { return json.prettyString }
            let rows = o.keys.sorted().filter { $0 != "name" }.compactMap { key -> (String, String)? in
                switch o[key]! {
                case .null: nil
                case .string(let s): (key, s)
                case .array(let a) where a.isEmpty: nil
                case .array(let a): (key, a.map { if case .string(let s) = $0 { s } else { $0.canonicalString } }.joined(separator: ", "))
                case let v: (key, v.canonicalString)
                }
            }
            let width = rows.map(\.0.count).max() ?? 0
            return ([name] + rows.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1.displayLine }).joined(separator: "\n")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a source (its history stays in the log).")
        @OptionGroup var location: StoreLocation
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                do { try await location.app().useCases.manageSources.remove(name) } catch let e as RepositoryError {
                    throw CLIError(e.cliMessage, exit: ExitCodes.notFound)
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
        discussion: reflowed(
            """
            Every response, 304 and failed attempt becomes an event. Items are removed only after a
            complete, successful pass over all pages. Exits 1 if any source failed.

            --details fetches the detail of new and changed items and revalidates every stored detail
            with a conditional request (an unchanged one costs a 304 and stores nothing), so a detail
            that changes while its list entry does not is noticed. --details=changed asks only for new
            and changed items (cheaper, misses such changes); --detail-max-age 6h revalidates only
            details last seen more than six hours ago.

            Examples:
              strata fetch
              strata fetch cars --details --images --concurrency 8
              strata fetch pokedex --details=changed
              strata fetch pokedex --details --detail-max-age 1d
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "Source names.") var names: [String] = []
    @Flag(help: ArgumentHelp("Fetch details; --details=changed for new and changed items only.", valueName: "all|changed")) var details = false
    @Option(name: .customLong("details-policy"), help: .hidden) var detailsPolicyText: String?
    var detailsPolicy: DetailsPolicy? { detailsPolicyText.flatMap(DetailsPolicy.init(rawValue:)) }

    /// Which details `--details` asks for: every one (revalidated), or new and changed items' only.
    enum DetailsPolicy: String { case all, changed }
    @Option(help: ArgumentHelp("With --details: revalidate only details last seen longer ago (30m, 6h, 2d, or seconds).", valueName: "duration"))
    var detailMaxAge: String?
    @Flag(help: "Fetch each item's image once.") var images = false
    @Option(help: "Detail/image requests in flight.") var concurrency = 8
    @Option(help: "At most this many list pages (an incomplete pass removes nothing).") var limit: Int?
    @Option(help: "Seconds allowed per request.") var timeout: Double = 30
    @Option(help: "Largest body accepted, bytes.") var maxBytes = 64 << 20
    @Option(help: "Extra attempts after a retryable failure.") var retries = 3
    @Flag(name: .customLong("insecure-skip-tls-verify"), help: "DANGEROUS: do not verify TLS certificates.") var insecure = false
    @Flag(
        help: "In a store sharing a team log: take the source's lease even though another node's has not expired (that node's later pushes of it are refused).")
    var force = false

    func validate() throws {
        guard concurrency >= 1, concurrency <= 64 else { throw ValidationError("--concurrency must be 1–64") }
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 and at most 86400 seconds") }
        guard maxBytes > 0 else { throw ValidationError("--max-bytes must be positive") }
        guard retries >= 0, retries <= 10 else { throw ValidationError("--retries must be 0–10") }
        if let limit, limit < 1 { throw ValidationError("--limit must be positive") }
        if let detailsPolicyText, detailsPolicy == nil {
            throw ValidationError("--details takes all or changed (--details=changed), not '\(detailsPolicyText)'")
        }
        if let detailMaxAge {
            guard Duration.seconds(parsing: detailMaxAge) != nil else { throw ValidationError("--detail-max-age takes a duration like 30m, 6h or 2d") }
            guard details, detailsPolicy != .changed else { throw ValidationError("--detail-max-age goes with --details (all details revalidated)") }
        }
    }

    /// `--details=all|changed` is spelled as an option with a value on a flag; it is rewritten to
    /// `--details --details-policy VALUE` before parsing (``Strata/main()``).
    static func rewritingDetails(_ args: [String]) -> [String] {
        args.flatMap { a -> [String] in
            guard a.hasPrefix("--details=") else { return [a] }
            return ["--details", "--details-policy", String(a.dropFirst("--details=".count))]
        }
    }

    func run() async throws {
        try await reportingErrors {
            var options = FetchSettings()
            options.concurrency = concurrency
            options.timeout = timeout
            options.maxBytes = maxBytes
            options.retries = retries
            let line = FetchProgressLine()
            options.progress = { line.show($0) }
            if insecure { warn("warning: TLS certificate verification is OFF") }
            let app = try await location.app { config in
                config.fetch = options
                config.insecureSkipTLSVerify = insecure
                config.requestsSoon = true
                if let t = environmentValue("STRATA_TEAM_TIMEOUT").flatMap(Double.init), t > 0, t <= 86_400 {
                    config.teamTimeout = .milliseconds(Int(t * 1000))
                }
            }
            var sources = try await app.useCases.sources.sources().map(\.name)
            if !names.isEmpty {
                for n in names where !sources.contains(n) {
                    throw CLIError("no source named \(n); see `strata source list`", exit: ExitCodes.notFound)
                }
                sources = names
            }
            if sources.isEmpty { throw CLIError("no sources to fetch; add one with `strata source add`") }
            var request = RefreshRequest(images: images, pageLimit: limit, takeLease: force)
            if details {
                request.details = detailsPolicy == .changed ? .changed : .all(maxAge: detailMaxAge.flatMap(Duration.seconds(parsing:)))
            }
            var failed = false
            for s in sources {
                do {
                    let r = try await app.useCases.refresh(s, request)
                    line.clear()
                    if let lease = r.lease { Self.report(lease, source: s) }
                    emit(r.line)
                    for f in r.failures.prefix(10) { warn("Error: source \(s): \(f)") }
                    if !r.failures.isEmpty { failed = true }
                } catch let e as RepositoryError where e.code == .network {
                    line.clear()
                    warn("Error: source \(s): \(e.cliMessage)")
                    failed = true
                } catch let e as RepositoryError where e.code == .conflict {
                    // Leased to another node: not fetched, nothing appended.
                    line.clear()
                    throw CLIError("source \(s) not fetched: \(e.cliMessage)", exit: ExitCodes.fenced)
                } catch let e as RepositoryError where e.code == .key {
                    // Redacted under another key than the history's: not fetched, nothing appended.
                    line.clear()
                    throw CLIError("source \(s) not fetched: \(e.cliMessage)", exit: ExitCodes.keyProblem)
                }
            }
            if failed { throw ExitCode.failure }
        }
    }

    /// What the lease step before another write did, when it is worth a line: not taken because
    /// the team log was out of reach.
    static func reportWrite(_ lease: SourceLease, source: String) { report(lease, source: source, done: ("written", "this write")) }

    /// What the lease step before a fetch (or, with `done`, another write) did, when it is worth
    /// a line: taken over from another node, or not taken because the team log was out of reach.
    static func report(_ lease: SourceLease, source: String, done: (verb: String, what: String) = ("fetched", "these events")) {
        if let why = lease.unreachable {
            warn(
                "warning: could not lease \(source) in team log \(lease.remote) (\(why)); \(done.verb) anyway: if another node leases \(source) meanwhile, a push of \(done.what) is refused"
            )
        } else if lease.forced, let from = lease.takenFrom {
            warn("took the lease on \(source) from node \(from) before it expired; that node's pushes of \(source) are refused from now on")
        }
    }
}

extension Duration {
    /// Seconds in `30`, `90s`, `30m`, `6h`, `2d` or `1w`; nil for anything else or a negative value.
    static func seconds(parsing text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var unit = 1.0
        if let last = number.last, let u = units[last] { unit = u; number = number.dropLast() }
        // At most about a century: a longer duration means nothing here and overflows dates.
        guard let n = Double(number), n >= 0, n.isFinite, n * unit <= 3.2e9 else { return nil }
        return n * unit
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Backfill a source's history from snapshot files or a git-scraping repository, or import HAR and WARC traffic.",
        discussion: reflowed(
            """
            Each snapshot goes through the same validation and events as a fetched list and is kept
            as observed at its own date, so `--as-of DATE` reads it whatever order snapshots are
            imported in; snapshots older than the newest observation leave that one current.

            With --git, every commit that touched --path (oldest first) is one snapshot observed at
            the commit's author date (--date committer for the committer date). Commit ids make it
            idempotent: a re-run imports only new commits, and a killed import resumes. Empty or
            invalid versions are recorded as failures and skipped. Files, by contrast, must all be
            valid: the first bad one stops the import.

            With --har or --warc, the exchanges of the file go into NAME, a recorded source (made on
            first use), each observed at its own time (startedDateTime, WARC-Date) and replayed by
            `strata serve`. Credential headers are stored as keyed digests. WARC response, request
            and revisit records are read (gzip per record or whole); warcinfo, metadata and resource
            records are skipped. Re-importing a file appends nothing.

            An import of 1,000 snapshots or more ends by packing the store, as `strata compact`
            does (without applying sources' retention): a long import leaves it as small as a
            compaction would. --pack packs after any import, --no-pack never; a store another
            strata process has open is left as it is, with a note.

            Examples:
              strata import cars snapshots/2025-01-01.json --recorded-at 2025-01-01T00:00:00Z
              strata import shop --har session.har
              strata import site --warc crawl.warc.gz
              strata import cars --git ~/scrapes/cars --path cars.json
              strata import cars --git ~/scrapes/cars --path cars.json --since v1 --until main --date committer
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument var name: String
    @Argument(help: "JSON files, imported in order.") var files: [String] = []
    @Option(help: "When the files' snapshots were taken (ISO 8601); default now.") var recordedAt: String?
    @Option(help: ArgumentHelp("A git repository (a working copy or bare) whose history holds the snapshots.", valueName: "repo")) var git: String?
    @Option(help: ArgumentHelp("With --git: the file's path inside the repository.", valueName: "file")) var path: String?
    @Option(help: ArgumentHelp("With --git: only commits after this revision.", valueName: "rev")) var since: String?
    @Option(help: ArgumentHelp("With --git: up to this revision (default HEAD).", valueName: "rev")) var until: String?
    @Option(help: "With --git: date each snapshot by the commit's author or committer date.") var date: GitDate = .author
    @Option(help: ArgumentHelp("A HAR 1.2 file (devtools, mitmproxy, Charles) into a recorded source.", valueName: "file")) var har: String?
    @Option(help: ArgumentHelp("A WARC 1.0/1.1 file (plain or gzipped; wget --warc-file) into a recorded source.", valueName: "file"))
    var warc: String?
    @Option(help: ArgumentHelp("With --har or --warc: another header whose value is kept out of the log (repeatable).", valueName: "name"))
    var redactHeader: [String] = []
    @Flag(inversion: .prefixedNo, help: "Pack the store after the import (default: after 1,000 snapshots or more).") var pack: Bool?

    enum GitDate: String, ExpressibleByArgument, CaseIterable { case author, committer }

    func validate() throws {
        if har != nil || warc != nil {
            guard har == nil || warc == nil else { throw ValidationError("give --har or --warc, not both") }
            guard files.isEmpty, git == nil, recordedAt == nil, path == nil, since == nil, until == nil else {
                throw ValidationError("--har and --warc import traffic: no files, --git, --path, --since, --until or --recorded-at")
            }
            guard pack == nil else { throw ValidationError("--pack and --no-pack go with snapshot files or --git") }
            for h in redactHeader where !HeaderName.isValid(h) {
                throw ValidationError("--redact-header takes a header name like X-Session, got '\(h)'")
            }
            return
        }
        guard redactHeader.isEmpty else { throw ValidationError("--redact-header goes with --har or --warc") }
        if let git {
            guard files.isEmpty else { throw ValidationError("give either files or --git, not both") }
            guard path != nil else { throw ValidationError("--git needs --path, the file's path inside the repository") }
            guard recordedAt == nil else { throw ValidationError("--recorded-at is for files; --git dates each commit itself (see --date)") }
            _ = git
        } else {
            guard !files.isEmpty else { throw ValidationError("give at least one file, or --git REPO --path FILE") }
            guard path == nil, since == nil, until == nil else { throw ValidationError("--path, --since and --until go with --git") }
            if let recordedAt, LogTime(iso8601: recordedAt) == nil { throw ValidationError("--recorded-at takes an ISO 8601 date-time") }
        }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            if let file = har ?? warc {
                let format: TrafficFormat = har != nil ? .har : .warc
                let bar = FetchProgressLine()
                let r = try await useCase {
                    try await app.useCases.importTraffic(format, path: file, into: name, redacting: redactHeader) { bytes in
                        bar.show(FetchStatus(source: name, stage: .list, done: Int(bytes >> 20), total: nil))
                    }
                }
                bar.clear()
                emit(r.line)
                return
            }
            let origin: HistoryOrigin
            if let git, let path {
                origin = .git(repository: git, path: path, since: since, until: until, committerDate: date == .committer)
            } else {
                origin = .files(files, observedAt: recordedAt.flatMap(LogTime.init(iso8601:)).map(\.date))
            }
            let bar = FetchProgressLine()
            do {
                let r = try await app.useCases.importHistory(name, from: origin, pack: pack) { done in
                    bar.show(FetchStatus(source: name, stage: .list, done: done, total: nil))
                }
                bar.clear()
                emit(r.line)
                switch r.packed {
                case .packed(let before, let after): emit("packed the store: \(byteCount(before)) → \(byteCount(after))")
                case .notPacked(let why): warn("the store was not packed: \(why); `strata compact` packs it later")
                case nil: break
                }
                for f in r.failures.prefix(10) { warn("skipped: \(f)") }
                if r.failures.count > 10 { warn("skipped \(r.failures.count - 10) more; see `strata log --type FetchFailed --stream \(name)`") }
            } catch let e as RepositoryError {
                bar.clear()
                throw CLIError(e.cliMessage, exit: e.code == .notFound ? ExitCodes.notFound : .failure)
            }
        }
    }
}

extension TrafficImport {
    /// The one-line summary.
    var line: String {
        var parts = ["\(source): \(appended) exchange\(appended == 1 ? "" : "s") imported from \(format.rawValue.uppercased())"]
        if exchanges > appended { parts.append("\(exchanges - appended) already recorded") }
        if format == .warc { parts.append("\(records) records") }
        let skips = skipped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        if !skips.isEmpty { parts.append("skipped " + skips.joined(separator: ", ")) }
        if unresolvedRevisits > 0 { parts.append("\(unresolvedRevisits) revisits without their original (kept without a body)") }
        parts.append(byteCount(bytes))
        parts.append(String(format: "%.2f s", seconds))
        if seconds > 0 { parts.append(String(format: "%.1f MB/s", Double(bytes) / 1e6 / seconds)) }
        return parts.joined(separator: ", ")
    }
}

extension ImportResult {
    /// The one-line summary.
    var line: String {
        var parts = ["\(source): \(imported) snapshot\(imported == 1 ? "" : "s") imported"]
        if alreadyImported > 0 { parts.append("\(alreadyImported) already imported") }
        if failed > 0 { parts.append("\(failed) skipped (empty or invalid)") }
        if backfilled {
            parts.append("backfilled: the newest observation stays current")
        } else if imported > 0 {
            parts.append("+\(added) added, ~\(changed) changed, -\(removed) removed")
        }
        parts.append(byteCount(bytes))
        parts.append(String(format: "%.2f s", seconds))
        if seconds > 0, imported > 0 {
            parts.append(String(format: "%.0f versions/s, %.1f MB/s", Double(imported) / seconds, Double(bytes) / 1e6 / seconds))
        }
        return parts.joined(separator: ", ")
    }
}

extension RefreshResult {
    /// The one-line summary.
    var line: String {
        var parts = ["\(source): \(pages) page\(pages == 1 ? "" : "s")"]
        if pagesNotModified > 0 { parts[0] += " (\(pagesNotModified) not modified)" }
        parts.append("+\(added) added, ~\(changed - reappeared) changed, -\(removed) removed" + (reappeared > 0 ? ", \(reappeared) reappeared" : ""))
        for (why, n) in restored.sorted(by: { $0.key < $1.key }) { parts.append("\(n) item\(n == 1 ? "" : "s") re-stored \(why)") }
        if details + detailsNotModified > 0 { parts.append("\(details) details" + (detailsNotModified > 0 ? " (\(detailsNotModified) not modified)" : "")) }
        if images > 0 { parts.append("\(images) images") }
        for (reason, n) in retried.sorted(by: { $0.key < $1.key }) {
            parts.append("\(n) retried after \(Int(reason) != nil ? reason : "a \(reason) error")")
        }
        parts.append(byteCount(bytes))
        parts.append(String(format: "%.2f s", seconds))
        if !complete { parts.append("incomplete pass: nothing removed") }
        return parts.joined(separator: ", ")
    }
}

/// A progress line on stderr while fetching, only when stderr is a terminal.
final class FetchProgressLine: Sendable {
    private struct Shown {
        var last = Date.distantPast
        var shown = false
    }
    private let enabled = isatty(STDERR_FILENO) == 1
    private let state = Mutex(Shown())

    func show(_ p: FetchStatus) {
        guard enabled else { return }
        // Progress comes from many tasks: one line at a time, and not more often than every 80 ms.
        state.withLock { s in
            let now = Date()
            guard now.timeIntervalSince(s.last) > 0.08 || p.done == p.total else { return }
            s.last = now
            s.shown = true
            var text = "\(p.source): \(p.stage.rawValue) \(p.done)"
            if let total = p.total, total > 0 {
                let width = 24, filled = min(width, p.done * width / total)
                text += "/\(total) [" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]"
            } else {
                text += " page\(p.done == 1 ? "" : "s")"
            }
            FileHandle.standardError.write(Data("\r\(text)\u{1B}[K".utf8))
        }
    }

    func clear() {
        state.withLock { s in
            if s.shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            s.shown = false
        }
    }
}
