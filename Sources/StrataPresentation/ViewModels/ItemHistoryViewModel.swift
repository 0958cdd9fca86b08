public import StrataDomain

/// The history screen: every version of an item with field-level changes.
@MainActor
public final class ItemHistoryViewModel {
    public struct State: Sendable, Equatable {
        public var source: String
        public var id: String?
        public var upTo: String?
        public var ignoring: [String] = []
        public var content: Loadable<HistoryViewData>
    }

    public enum Command: Sendable, Equatable {
        case load(id: String, upTo: String?, ignoring: [String])
        /// Hides (or, with an empty list, shows again) changes to these paths.
        case ignore([String])
    }

    private let history: GetItemHistory
    private let store: StateStore<State>

    public init(source: String, history: GetItemHistory) {
        self.history = history
        store = StateStore(State(source: source, content: .idle))
    }

    public var state: State { store.value }
    public func updates() -> AsyncStream<State> { store.updates() }

    public func send(_ command: Command) async {
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
            let point = try PointInTime.parse(s.upTo, option: "--as-of")
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
