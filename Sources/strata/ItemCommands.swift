import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

/// `--as-of` validated at parse time: a seq or an ISO 8601 date/time.
struct PointArgument: ExpressibleByArgument {
    var text: String
    init?(argument: String) {
        guard PointInTime(text: argument) != nil else { return nil }
        text = argument
    }
    static var defaultValueDescription: String { "SEQ|DATE" }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List a source's items from the store (never the network).",
        discussion: reflowed(
            """
            --where takes PATH=VALUE (the value compared as text) or an expression (docs/cli.md,
            "Expressions"): price < 10000, make in ("Kia", "Toyota"), rating >= 4 and not
            sold, seller.email = null. Several --where are and-ed. An equality or `in` on a field
            declared with `source add --index` uses its index, now or --as-of; a number range on
            one uses the sorted index (now); the rest, --search and --sort scan the source, and a
            note on stderr says which --index would avoid it.

            Examples:
              strata list cars
              strata list cars --where make=Toyota --sort -price --limit 10
              strata list cars --where 'price >= 5000 and price < 10000'
              strata list cars --where 'make in ("Kia", "Škoda")' --as-of 2026-01-31
              strata list cars --search corolla --format csv
              strata list cars --as-of 2026-01-31T00:00:00Z --format json
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Option(name: .customLong("where"), help: ArgumentHelp("Only items that meet PATH=VALUE or an expression (repeatable: and-ed).", valueName: "expr"))
    var wheres: [String] = []
    @Option(help: "Only items whose id, title, subtitle or fields contain this text (any case).") var search: String?
    @Flag(help: "Draw no thumbnails in the terminal's table (one line per item).") var noThumbnails = false
    @Option(parsing: .unconditional, help: ArgumentHelp("Order by a field; prefix - for descending (`--sort -price`).", valueName: "path")) var sort: String?
    @Option(help: "At most this many items.") var limit: Int?
    @Option(help: "Skip this many items first.") var offset = 0
    @Option(help: "Read as of a seq or an ISO 8601 date.") var asOf: PointArgument?
    @Flag(help: "Fetch the source (list only) before listing; a failure keeps the stored list.") var refresh = false
    @Flag(help: "Only items owned by you (the source's --owner-field equals `config get user`).") var mine = false
    @Option(help: "table, json, ndjson or csv.") var format: ViewFormat = .table

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        guard offset >= 0 else { throw ValidationError("--offset must not be negative") }
        try Self.checkWheres(wheres)
        if refresh && asOf != nil { throw ValidationError("--refresh and --as-of do not go together") }
    }

    func run() async throws {
        try await reportingErrors {
            let screen = Screen()
            let app = try await location.app(screen: screen) { if format != .table || noThumbnails { $0.thumbnails = nil } }
            var wheres = wheres
            if mine {
                let source = try await useCase { try await app.useCases.sources.source(named: name) }
                guard let owner = source.ownerField else {
                    throw CLIError(
                        "source \(name) has no owner field; set one with `strata source change \(name) --owner-field PATH`", exit: ExitCode.validationFailure)
                }
                let user = try await useCase { try await app.useCases.write.user() }
                wheres.append("\(owner)=\(user)")
            }
            let filter = FilterViewData(wheres: wheres, search: search, sort: sort, limit: limit, offset: offset, asOf: asOf?.text)
            if format == .json || format == .ndjson {
                if refresh { _ = try? await app.useCases.refresh(name) }
                let result: QueryItems.Result
                do { result = try await app.useCases.query(try ItemQuery(source: name, filter: filter, naming: .flags)) } catch {
                    throw PresentableError(error).cli
                }
                emit(result.page.items.map(JSONValue.init(item:)), as: format == .json ? .json : .ndjson)
                if result.page.total == 0, let note = await unknownFields(app, wheres) {
                    warn(note)
                } else if let note = filter.scanNote(
                    source: name, indexed: result.source.indexPaths, sortedIndex: !app.storeIsEncrypted, usedIndex: result.page.usedIndex, wording: .cli)
                {
                    warn(note)
                }
                return
            }
            let state = await loadList(app: app, filter: filter)
            if mine, case .loaded(let list) = state.content, list.rows.isEmpty, format == .table {
                emit("no items owned by you in \(name) (create one with `strata create \(name) --set …`)")
                return
            }
            guard case .loaded(let list) = state.content else {
                throw (state.content.error ?? PresentableError(kind: .storage, message: "the list did not load")).cli
            }
            let unknown = list.total == 0 ? await unknownFields(app, wheres) : nil
            defer {
                if let unknown {
                    warn(unknown)
                } else if let note = filter.scanNote(
                    source: name, indexed: list.columns, sortedIndex: !app.storeIsEncrypted, usedIndex: list.usedIndex, wording: .cli)
                {
                    warn(note)
                }
            }
            if format == .csv { FileHandle.standardOutput.write(Data(CSVRenderer().render(list).utf8)); return }
            await screen.page(ItemListRenderer(options: screen.options).render(list, refreshMessage: state.refreshMessage))
            if let m = state.refreshMessage, m.contains("failed") { warn("Error: \(m)"); throw ExitCode.failure }
        }
    }

    /// Why a filter found nothing when it names a field no stored item has (`--where mkae=…`):
    /// the field, and the known fields closest to it. Nil when every field exists, or the
    /// source's shape is unknown.
    private func unknownFields(_ app: StrataApp, _ wheres: [String]) async -> String? {
        guard !wheres.isEmpty, let schema = try? await app.useCases.schema(source: name, at: asOf.flatMap { PointInTime(text: $0.text) } ?? .now),
            !schema.fields.isEmpty
        else { return nil }
        let known = Set(schema.fields.map { $0.path.replacingOccurrences(of: "[]", with: "") })
        let paths = wheres.compactMap { w in w.firstIndex(of: "=").map { String(w[..<$0]) } }
        guard let missing = paths.first(where: { !known.contains($0) }) else { return nil }
        let close = known.map { ($0, Strata.editDistance(missing, $0)) }.filter { $0.1 <= max(1, min(3, missing.count / 2)) }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(3).map { "`\($0.0)`" }
        let hint = close.isEmpty ? "see its fields with `strata schema \(name)`" : "did you mean \(close.joined(separator: " or "))?"
        return "note: no item of \(name) has a field `\(missing)`; \(hint)"
    }

    @MainActor
    private func loadList(app: StrataApp, filter: FilterViewData) async -> ItemListViewModel.State {
        let vm = app.viewModels.itemList(source: name, filter: filter, inputs: .flags)
        if refresh {
            let spinner = Spinner("fetching \(name)")
            spinner.start()
            await vm.send(.refresh(details: false, images: false))
            spinner.stop()
        } else {
            await vm.send(.load)
        }
        return vm.state
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one item in full, downloading its detail first.",
        discussion: reflowed(
            """
            Without --as-of and --offline the item's detail is downloaded into the store first; if
            that fails, the stored item is shown and one warning on stderr says why (exit 0; with
            --fresh, exit 1). An id the store never held is not found (exit 3) without asking the
            network; --fresh asks it anyway. With --as-of the network is never touched. Long output
            goes through $PAGER on a terminal.

            Examples:
              strata show cars 42
              strata show cars 42 --offline --format json
              strata show cars 42 --as-of 17
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Argument(help: "The item's id.") var id: String
    @Option(help: "Read as of a seq or an ISO 8601 date (never downloads).") var asOf: PointArgument?
    @Flag(help: "Do not download; show what is stored.") var offline = false
    @Flag(help: "Fail (exit 1) when the detail cannot be downloaded, instead of showing the stored one; download an id the store never held.")
    var fresh = false
    @Option(help: "table or json.") var format: ViewFormat = .table

    func validate() throws {
        guard format == .table || format == .json else { throw ValidationError("--format must be table or json for show") }
        if fresh && (offline || asOf != nil) { throw ValidationError("--fresh downloads the detail; it does not go with --offline or --as-of") }
    }

    /// The one warning for a failed download, or the error with --fresh.
    private func downloadFailed(_ reason: String) throws {
        if fresh { throw CLIError("could not download the detail of \(id): \(reason)") }
        warn("warning: could not download the detail of \(id): \(reason); showing the stored item (--fresh fails instead)")
    }

    func run() async throws {
        try await reportingErrors {
            let screen = Screen()
            let app = try await location.app(screen: screen) { if format != .table { $0.thumbnails = nil } }
            if format == .json {
                let spinner = Spinner("downloading \(id)")
                spinner.start()
                let result: LoadItemDetail.Result
                do {
                    result = try await app.useCases.loadDetail(
                        source: name, id: id, at: asOf.flatMap { PointInTime(text: $0.text) } ?? .now, offline: offline, fresh: fresh)
                } catch { spinner.stop(); throw PresentableError(error).cli }
                spinner.stop()
                if fresh, let e = result.refreshError { try downloadFailed(e.cliMessage) }
                emit(JSONValue(item: result.item).prettyString)
                if let e = result.refreshError { try downloadFailed(e.cliMessage) }
                return
            }
            let state = await open(app: app)
            guard case .loaded(let detail) = state.content else {
                throw (state.content.error ?? PresentableError(kind: .storage, message: "the item did not load")).cli
            }
            if fresh, let e = detail.refreshError { try downloadFailed(e) }
            // The failure is said once, on stderr; the page shows the item alone.
            var shown = detail
            shown.refreshError = nil
            await screen.page(ItemDetailRenderer(options: screen.options).render(shown))
            if let e = detail.refreshError { try downloadFailed(e) }
        }
    }

    @MainActor
    private func open(app: StrataApp) async -> ItemDetailViewModel.State {
        let vm = app.viewModels.itemDetail(source: name, inputs: .flags)
        let spinner = Spinner("downloading \(id)")
        let watcher = Task { @MainActor in
            for await s in vm.updates() {
                if s.isDownloading && s.content.isLoading { spinner.start() } else { spinner.stop() }
            }
        }
        await vm.send(.open(id: id, asOf: asOf?.text, offline: offline))
        watcher.cancel()
        spinner.stop()
        return vm.state
    }
}

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Every version of an item, with field-level changes.",
        discussion: reflowed(
            """
            Each version shows its seq, time, the fetch run that saw it and what changed (old → new),
            removals and reappearances included. --as-of cuts the history at a point.

            Examples:
              strata history cars 42
              strata history cars 42 --ignore updated_at --format json
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Argument(help: "The item's id.") var id: String
    @Option(help: ArgumentHelp("Hide changes to this field (repeatable).", valueName: "path")) var ignore: [String] = []
    @Option(help: "Only versions up to this seq or ISO 8601 date.") var asOf: PointArgument?
    @Option(help: ArgumentHelp("The value at this path at each version (with a sparkline of numbers).", valueName: "path")) var field: String?
    @Option(help: "table, json or ndjson (with --field: csv too).") var format: ViewFormat = .table

    func validate() throws {
        guard format != .csv || field != nil else { throw ValidationError("--format must be table, json or ndjson for history (csv with --field)") }
        if let field, !SourceSpec.isPath(field) {
            throw ValidationError("--field '\(field)' is not a dotted path like price or specs.fuel")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let screen = Screen()
            let app = try await location.app(screen: screen) { $0.thumbnails = nil }
            if let field {
                let result: GetItemHistory.Result
                do {
                    result = try await app.useCases.history(source: name, id: id, upTo: asOf.flatMap { PointInTime(text: $0.text) } ?? .now)
                } catch { throw PresentableError(error).cli }
                let series = SeriesRenderer(path: field)
                switch format {
                case .json: emit(JSONValue.array(series.json(result.versions)).prettyString)
                case .ndjson: emit(series.json(result.versions), as: .ndjson)
                case .csv: emit(series.csv(result.versions))
                case .table: emit(series.table(result.versions, item: id, options: screen.options))
                }
                return
            }
            if format != .table {
                let result: GetItemHistory.Result
                do {
                    result = try await app.useCases.history(source: name, id: id, upTo: asOf.flatMap { PointInTime(text: $0.text) } ?? .now, ignoring: ignore)
                } catch { throw PresentableError(error).cli }
                emit(result.versions.map(JSONValue.init(version:)), as: format == .json ? .json : .ndjson)
                return
            }
            let state = await load(app: app)
            guard case .loaded(let history) = state.content else {
                throw (state.content.error ?? PresentableError(kind: .storage, message: "the history did not load")).cli
            }
            await screen.page(HistoryRenderer(options: screen.options).render(history))
        }
    }

    @MainActor
    private func load(app: StrataApp) async -> ItemHistoryViewModel.State {
        let vm = app.viewModels.itemHistory(source: name, inputs: .flags)
        await vm.send(.load(id: id, upTo: asOf?.text, ignoring: ignore))
        return vm.state
    }
}

struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Items added, removed and changed between two points.",
        discussion: reflowed(
            """
            --when keeps the items whose difference meets an expression (docs/cli.md, "Expressions"):
            the item at --to is read as the item, at --from as `old.` (an added item's `old.`
            fields are null, a removed one's fields are).

            Examples:
              strata diff cars --from 5 --to 40
              strata diff cars --from 2026-01-01 --format json
              strata diff cars --from 5 --when 'price < old.price - 1000'
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Option(help: "The earlier point: a seq or an ISO 8601 date.") var from: PointArgument
    @Option(help: "The later point (default: now).") var to: PointArgument?
    @Option(help: ArgumentHelp("Hide changes to this field (repeatable).", valueName: "path")) var ignore: [String] = []
    @Option(help: ArgumentHelp("Only items whose difference meets an expression (repeatable: and-ed).", valueName: "expr")) var when: [String] = []
    @Option(help: "table, json or ndjson.") var format: ViewFormat = .table

    func validate() throws {
        guard format != .csv else { throw ValidationError("--format must be table, json or ndjson for diff") }
        try Self.checkExpressions(when, input: "--when")
    }

    func run() async throws {
        try await reportingErrors {
            let screen = Screen()
            let app = try await location.app(screen: screen) { $0.thumbnails = nil }
            let conditions = try when.map { text throws(PresentableError) in try ItemExpression.filter(text, naming: .flags, input: "--when") }
            if format != .table {
                let diff: CollectionDiff
                do {
                    diff = try await app.useCases.diff(
                        source: name, from: PointInTime(text: from.text)!,
                        to: to.flatMap { PointInTime(text: $0.text) } ?? .now, ignoring: ignore, when: conditions)
                } catch { throw PresentableError(error).cli }
                if format == .json {
                    emit(JSONValue(collectionDiff: diff).prettyString)
                } else {
                    emit(diff.items.map(JSONValue.init(diff:)), as: .ndjson)
                }
                return
            }
            let state = await load(app: app, when: conditions)
            guard case .loaded(let diff) = state.content else {
                throw (state.content.error ?? PresentableError(kind: .storage, message: "the diff did not load")).cli
            }
            await screen.page(DiffRenderer(options: screen.options).render(diff))
        }
    }

    @MainActor
    private func load(app: StrataApp, when: [ItemExpression]) async -> CollectionDiffViewModel.State {
        let vm = app.viewModels.collectionDiff(source: name, inputs: .flags)
        await vm.send(.compare(from: from.text, to: to?.text, ignoring: ignore, when: when))
        return vm.state
    }
}

extension AsyncParsableCommand {
    /// Each `--where` is `PATH=VALUE` or an expression that parses: a usage error (exit 64) with
    /// the position and what was expected, before any store is opened.
    static func checkWheres(_ wheres: [String]) throws {
        try checkExpressions(wheres.filter { FieldFilter(legacy: $0) == nil }, input: "--where")
    }

    /// Each expression parses (one parser, one set of messages for every command).
    static func checkExpressions(_ texts: [String], input: String) throws {
        for t in texts {
            do { _ = try ItemExpression.filter(t, naming: .flags, input: input) } catch { throw ValidationError(error.message) }
        }
    }
}

struct CountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Count a source's items that match, by the values of fields (facets).",
        discussion: reflowed(
            """
            The items are chosen as `list` chooses them (--where, --search, --as-of), and counted
            by the value at each --by path: an item counts once for each value a path reaches (an
            array: each element), `(none)` where it has none; most first. JSON: one object per
            group, each --by path with its value and `count`.

            Examples:
              strata count cars
              strata count cars --by make
              strata count cars --where 'price < 10000' --by make --by fuel --format json
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Option(name: .customLong("where"), help: ArgumentHelp("Only items that meet PATH=VALUE or an expression (repeatable: and-ed).", valueName: "expr"))
    var wheres: [String] = []
    @Option(name: .customLong("by"), help: ArgumentHelp("Count by the value at this path (repeatable).", valueName: "path")) var by: [String] = []
    @Option(help: "Only items whose id, title, subtitle or fields contain this text (any case).") var search: String?
    @Option(help: "Count as of a seq or an ISO 8601 date.") var asOf: PointArgument?
    @Option(help: "table, json or csv.") var format: ViewFormat = .table

    func validate() throws {
        try Self.checkWheres(wheres)
        guard format != .ndjson else { throw ValidationError("--format must be table, json or csv for count") }
        for p in by where !SourceSpec.isPath(p) {
            throw ValidationError("--by '\(p)' is not a dotted path like make or specs.fuel")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            let filter = FilterViewData(wheres: wheres, search: search, asOf: asOf?.text)
            let result: (source: Source, counts: [ItemCount], usedIndex: Bool)
            do { result = try await app.useCases.query.count(try ItemQuery(source: name, filter: filter, naming: .flags), by: by) } catch {
                throw PresentableError(error).cli
            }
            let renderer = CountRenderer(by: by)
            switch format {
            case .json, .ndjson: emit(JSONValue.array(renderer.json(result.counts)).prettyString)
            case .csv: emit(renderer.csv(result.counts))
            case .table: emit(renderer.table(result.counts, maxWidth: Terminal.width))
            }
        }
    }
}

struct ChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Every item change between two points: which items changed, how, and when.",
        discussion: reflowed(
            """
            Each change of each item after --from (default: the start) up to --to (default: now),
            oldest first in observed order, with its seq, observed time, kind and the field changes
            (path, old, new). --when keeps the changes that meet an expression (docs/cli.md,
            "Expressions"): the item after the change is read as the item, before it as `old.` (an
            addition's `old.` fields are null, a removal's fields are). --field keeps the changes
            that touch one of the paths; --kind the kinds named.

            Examples:
              strata changes cars --from 2026-03-01
              strata changes cars --when 'price < old.price * 0.9' --field price
              strata changes countries --when 'name != old.name' --kind changed
              strata changes cars --kind added,removed --format csv
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The source name.") var name: String
    @Option(help: "After this seq or ISO 8601 date (default: the start).") var from: PointArgument?
    @Option(help: "Up to this seq or ISO 8601 date (default: now).") var to: PointArgument?
    @Option(help: ArgumentHelp("Only changes that meet an expression (repeatable: and-ed).", valueName: "expr")) var when: [String] = []
    @Option(help: ArgumentHelp("Only changes that touch this field (repeatable: any).", valueName: "path")) var field: [String] = []
    @Option(help: ArgumentHelp("Only these kinds: added, changed, removed, reappeared (comma-separated).", valueName: "kinds")) var kind: String?
    @Option(help: "At most this many changes.") var limit: Int?
    @Option(help: "table, json, ndjson or csv.") var format: ViewFormat = .table

    var kinds: Set<ChangeKind>? {
        kind.map { Set($0.split(separator: ",").compactMap { ChangeKind(rawValue: $0.trimmingCharacters(in: .whitespaces)) }) }
    }

    func validate() throws {
        try Self.checkExpressions(when, input: "--when")
        if let kind, kinds?.count != kind.split(separator: ",").count {
            throw ValidationError("--kind takes added, changed, removed and reappeared, comma-separated: \(kind)")
        }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app()
            var filter = ReadChanges.Filter()
            filter.when = try when.map { try ItemExpression.filter($0, naming: .flags, input: "--when") }
            filter.fields = field
            if let kinds { filter.kinds = kinds }
            filter.limit = limit
            let (from, to) = (from.flatMap { PointInTime(text: $0.text) }, to.flatMap { PointInTime(text: $0.text) } ?? .now)
            let renderer = ChangesRenderer()
            if format == .ndjson {
                // A line as each change is read: the first long before a large span's last.
                let out = LineStream()
                _ = try await useCase {
                    try await app.useCases.changes.each(source: name, from: from, to: to, filter: filter) { out.write(renderer.json($0).canonicalString) }
                }
                out.flush()
                return
            }
            let (_, changes) = try await useCase { try await app.useCases.changes(source: name, from: from, to: to, filter: filter) }
            switch format {
            case .json: emit(JSONValue.array(changes.map(renderer.json)).prettyString)
            case .ndjson: break
            case .csv: emit(renderer.csv(changes))
            case .table: emit(renderer.table(changes, options: Screen().options))
            }
        }
    }
}
