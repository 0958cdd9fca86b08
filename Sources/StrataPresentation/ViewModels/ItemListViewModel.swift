package import StrataDomain

/// The list screen: a source's items, filtered, searched, sorted, paged and read as of any
/// point. Commands never block; state changes are published on ``updates()``.
@MainActor
package final class ItemListViewModel {
    package struct State: Sendable, Equatable {
        package var source: String
        package var filter: FilterViewData
        package var content: Loadable<ItemListViewData>
        /// A refresh is downloading.
        package var isRefreshing = false
        /// The last refresh's outcome, for a status line.
        package var refreshMessage: String?
        /// The item the user opened.
        package var openedItem: String?
    }

    package enum Command: Sendable, Equatable {
        case load
        case filter(FilterViewData)
        /// A seq or date, or nil for now.
        case setAsOf(String?)
        /// Downloads the source again, then reloads; a failure keeps the stored list.
        case refresh(details: Bool, images: Bool)
        case openDetail(String)
        case nextPage
    }

    private let query: QueryItems
    private let refreshSource: RefreshSource
    private let items: any ItemRepository
    private let thumbnails: ThumbnailSettings?
    /// How the front end names its inputs, for problems with them.
    private let inputs: FilterInputNames
    private let store: StateStore<State>

    package init(
        source: String, filter: FilterViewData = FilterViewData(), query: QueryItems, refresh: RefreshSource,
        items: any ItemRepository, thumbnails: ThumbnailSettings? = nil, inputs: FilterInputNames = .browser
    ) {
        self.inputs = inputs
        self.query = query
        self.refreshSource = refresh
        self.items = items
        self.thumbnails = thumbnails
        store = StateStore(State(source: source, filter: filter, content: .idle))
    }

    package var state: State { store.value }
    package func updates() -> AsyncStream<State> { store.updates() }

    package func send(_ command: Command) async {
        var s = state
        switch command {
        case .load:
            await load()
        case .filter(let f):
            s.filter = f
            store.set(s)
            await load()
        case .setAsOf(let a):
            s.filter.asOf = a
            store.set(s)
            await load()
        case .nextPage:
            guard let limit = s.filter.limit, let shown = s.content.value, s.filter.offset + limit < shown.total else { return }
            s.filter.offset += limit
            store.set(s)
            await load()
        case .openDetail(let id):
            s.openedItem = id
            store.set(s)
        case .refresh(let details, let images):
            s.isRefreshing = true
            s.refreshMessage = nil
            store.set(s)
            var message: String
            do {
                let r = try await refreshSource(s.source, details: details, images: images)
                message = "fetched \(r.pages) page\(r.pages == 1 ? "" : "s"): \(r.added) added, \(r.changed) changed, \(r.removed) removed"
                if !r.failures.isEmpty { message += "; \(r.failures.count) request\(r.failures.count == 1 ? "" : "s") failed" }
            } catch {
                message = "refresh failed: \(PresentableError(error).message); showing stored data"
            }
            s = state
            s.isRefreshing = false
            s.refreshMessage = message
            store.set(s)
            await load()
        }
    }

    private func load() async {
        var s = state
        let previous = s.content.value
        s.content = .loading(previous: previous)
        store.set(s)
        do {
            let q = try ItemQuery(source: s.source, filter: s.filter, naming: inputs)
            let result = try await query(q)
            var data = ItemListViewData(source: result.source, page: result.page, offset: q.offset)
            if thumbnails != nil {
                for (i, item) in result.page.items.enumerated() {
                    data.rows[i].thumbnail = await thumbnail(for: item, settings: thumbnails, items: items)
                }
            }
            s = state
            s.content = .loaded(data)
        } catch {
            s = state
            s.content = .failed(PresentableError(error), previous: previous)
        }
        store.set(s)
    }
}
