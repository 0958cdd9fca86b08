import ArgumentParser
import StrataApp
import StrataDomain
import StrataJSON
import StrataPresentation

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List events, newest first.",
        discussion: reflowed(
            """
            Examples:
              strata log --limit 20
              strata log --stream cars --type SnapshotRecorded --format json
              strata log --since 100 --oldest-first --format ndjson
              strata log --remote team --limit 20     # the team log's events, by global seq
            """)
    )

    @OptionGroup var location: StoreLocation
    @Option(help: "Only events of this stream.") var stream: String?
    @Option(help: "Only events of this type.") var type: String?
    @Option(help: "Only events with seq ≥ this.") var since: UInt64?
    @Option(help: "Only events with seq ≤ this.") var until: UInt64?
    @Option(help: "At most this many events.") var limit = 50
    @Flag(help: "Oldest first instead of newest first.") var oldestFirst = false
    @Option(help: "table, json or ndjson.") var format: OutputFormat = .table
    @Option(help: "Read the team log of this remote (`strata remote add`) instead of the store's own log: its global seqs, the same columns.") var remote:
        String?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
        if let since, let until, since > until { throw ValidationError("--since must not be after --until") }
    }

    func run() async throws {
        try await reportingErrors {
            guard let remote else { return try await show(nil) }
            try await location.team.reading(remote: remote) { replay in try await show(replay) }
        }
    }

    /// Lists the events of a team log (`remote`), or of the store's own when nil, through
    /// ``ReplayLog``: the same reads, whichever log it is.
    private func show(_ remote: ReplayLog?) async throws {
        let screen = Screen()
        let query = LogQuery(stream: stream, type: type, fromSeq: since ?? 1, toSeq: until ?? .max, limit: limit, newestFirst: !oldestFirst)
        switch format {
        case .json, .ndjson:
            let replay = if let remote { remote } else { try await location.app().useCases.replay }
            emit(try await replay(query).map { JSONValue(entry: $0) }, as: format)
        case .table:
            let app = try await location.app(screen: screen) { $0.thumbnails = nil }
            let state = await table(app: app, replay: remote, query: query)
            guard case .loaded(let rows) = state.content else {
                throw (state.content.error ?? PresentableError(kind: .storage, message: "the log did not load")).cli
            }
            await screen.page(EventLogRenderer(options: screen.options).render(rows))
        }
    }

    @MainActor
    private func table(app: StrataApp, replay: ReplayLog?, query: LogQuery) async -> EventLogViewModel.State {
        let vm = app.viewModels.eventLog(replay: replay)
        await vm.send(.load(query))
        return vm.state
    }
}
