package import StrataDomain

/// The diff screen: items added, removed and changed between two points.
@MainActor
package final class CollectionDiffViewModel {
    package struct State: Sendable, Equatable {
        package var source: String
        package var from: String?
        package var to: String?
        package var ignoring: [String] = []
        package var content: Loadable<DiffViewData>
    }

    package enum Command: Sendable, Equatable {
        /// `to` nil: now.
        /// `when`: only the items whose difference meets every expression (``DiffCollection``).
        case compare(from: String, to: String?, ignoring: [String], when: [ItemExpression] = [])
    }

    private let diff: DiffCollection
    private let sources: any SourceRepository
    /// How the front end names its inputs, for problems with them.
    private let inputs: FilterInputNames
    private let store: StateStore<State>

    package init(source: String, diff: DiffCollection, sources: any SourceRepository, inputs: FilterInputNames = .browser) {
        self.inputs = inputs
        self.diff = diff
        self.sources = sources
        store = StateStore(State(source: source, content: .idle))
    }

    package var state: State { store.value }
    package func updates() -> AsyncStream<State> { store.updates() }

    package func send(_ command: Command) async {
        var s = state
        guard case let .compare(from, to, ignoring, when) = command else { return }
        s.from = from; s.to = to; s.ignoring = ignoring
        let previous = s.content.value
        s.content = .loading(previous: previous)
        store.set(s)
        do {
            let a = try PointInTime.parse(from, option: inputs.from, quoting: inputs.quoting)
            let b = try PointInTime.parse(to, option: inputs.to, quoting: inputs.quoting)
            let result = try await diff(source: s.source, from: a, to: b, ignoring: ignoring, when: when)
            let source = try await sources.source(named: s.source)
            s = state
            s.content = .loaded(DiffViewData(source: source, diff: result))
        } catch {
            s = state
            s.content = .failed(PresentableError(error), previous: previous)
        }
        store.set(s)
    }
}
