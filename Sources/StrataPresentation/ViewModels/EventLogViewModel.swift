package import StrataDomain

/// The log screen: events, newest first by default.
@MainActor
package final class EventLogViewModel {
    package struct State: Sendable, Equatable {
        package var query: LogQuery
        package var content: Loadable<[EventViewData]>
    }

    package enum Command: Sendable, Equatable {
        case load(LogQuery)
        /// The next `limit` events after the last one shown.
        case more
    }

    private let replay: ReplayLog
    private let store: StateStore<State>

    package init(replay: ReplayLog) {
        self.replay = replay
        store = StateStore(State(query: LogQuery(), content: .idle))
    }

    package var state: State { store.value }
    package func updates() -> AsyncStream<State> { store.updates() }

    package func send(_ command: Command) async {
        var s = state
        switch command {
        case .load(let q):
            s.query = q
        case .more:
            guard let last = s.content.value?.last else { return }
            if s.query.newestFirst {
                guard last.seq > 1 else { return }
                s.query.toSeq = last.seq - 1
            } else {
                s.query.fromSeq = last.seq + 1
            }
        }
        let previous = s.content.value
        s.content = .loading(previous: previous)
        store.set(s)
        do {
            let entries = try await replay(s.query)
            s = state
            s.content = .loaded(entries.map(EventViewData.init(entry:)))
        } catch {
            s = state
            s.content = .failed(PresentableError(error), previous: previous)
        }
        store.set(s)
    }
}
