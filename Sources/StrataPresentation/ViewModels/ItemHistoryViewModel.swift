package import StrataDomain

/// The history screen: every version of an item with field-level changes.
@MainActor
package final class ItemHistoryViewModel {
    package struct State: Sendable, Equatable {
        package var source: String
        package var id: String?
        package var upTo: String?
        package var ignoring: [String] = []
        package var content: Loadable<HistoryViewData>
    }

    package enum Command: Sendable, Equatable {
        case load(id: String, upTo: String?, ignoring: [String])
        /// Hides (or, with an empty list, shows again) changes to these paths.
        case ignore([String])
    }

    private let history: GetItemHistory
    /// How the front end names its inputs, for problems with them.
    private let inputs: FilterInputNames
    private let store: StateStore<State>

    package init(source: String, history: GetItemHistory, inputs: FilterInputNames = .browser) {
        self.inputs = inputs
        self.history = history
        store = StateStore(State(source: source, content: .idle))
    }

    package var state: State { store.value }
    package func updates() -> AsyncStream<State> { store.updates() }

    package func send(_ command: Command) async {
        var s = state
        switch command {
        case let .load(id, upTo, ignoring): s.id = id; s.upTo = upTo; s.ignoring = ignoring
        case .ignore(let paths): s.ignoring = paths
        }
        guard let id = s.id else { return }
        let previous = s.content.value
        s.content = .loading(previous: previous)
        store.set(s)
        do {
            let point = try PointInTime.parse(s.upTo, option: inputs.asOf, quoting: inputs.quoting)
            let r = try await history(source: s.source, id: id, upTo: point, ignoring: s.ignoring)
            s = state
            s.content = .loaded(HistoryViewData(source: r.source, id: id, versions: r.versions))
        } catch {
            s = state
            s.content = .failed(PresentableError(error), previous: previous)
        }
        store.set(s)
    }
}
