import ArgumentParser
import EventStore
import StrataApp
import StrataDomain
import StrataPresentation

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List events, newest first.",
        discussion: reflowed("""
        Examples:
          strata log --limit 20
          strata log --stream cars --type SnapshotRecorded --format json
          strata log --since 100 --oldest-first --format ndjson
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

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
        if let since, let until, since > until { throw ValidationError("--since must not be after --until") }
    }

    func run() async throws {
        try await reportingErrors {
            switch format {
            case .json, .ndjson:
                let store = try await location.open()
                let events = try await store.events(EventQuery(
                    stream: stream, type: type, fromSeq: since ?? 1, toSeq: until ?? .max, limit: limit, descending: !oldestFirst))
                emit(events.map(\.json), as: format)
            case .table:
                let screen = Screen()
                let app = try await location.app(screen: screen) { $0.thumbnails = nil }
                let query = LogQuery(stream: stream, type: type, fromSeq: since ?? 1, toSeq: until ?? .max, limit: limit, newestFirst: !oldestFirst)
                let state = await table(app: app, query: query)
                guard case .loaded(let rows) = state.content else {
                    throw (state.content.error ?? PresentableError(kind: .storage, message: "the log did not load")).cli
                }
                screen.page(EventLogRenderer(options: screen.options).render(rows))
            }
        }
    }

    @MainActor
    private func table(app: StrataApp, query: LogQuery) async -> EventLogViewModel.State {
        let vm = app.viewModels.eventLog()
        await vm.send(.load(query))
        return vm.state
    }
}
