package import StrataDomain

/// The detail screen: downloads the item's detail into the store (unless offline or reading as
/// of a point), then shows it from the store. A failed download keeps the stored detail.
@MainActor
package final class ItemDetailViewModel {
    package struct State: Sendable, Equatable {
        package var source: String
        package var id: String?
        package var asOf: String?
        package var offline = false
        /// The detail is being downloaded (show a spinner).
        package var isDownloading = false
        package var content: Loadable<ItemDetailViewData>
    }

    package enum Command: Sendable, Equatable {
        case open(id: String, asOf: String?, offline: Bool)
        case reload
    }

    private let loadDetail: LoadItemDetail
    private let items: any ItemRepository
    private let thumbnails: ThumbnailSettings?
    /// How the front end names its inputs, for problems with them.
    private let inputs: FilterInputNames
    private let store: StateStore<State>

    package init(
        source: String, loadDetail: LoadItemDetail, items: any ItemRepository, thumbnails: ThumbnailSettings? = nil, inputs: FilterInputNames = .browser
    ) {
        self.inputs = inputs
        self.loadDetail = loadDetail
        self.items = items
        self.thumbnails = thumbnails
        store = StateStore(State(source: source, content: .idle))
    }

    package var state: State { store.value }
    package func updates() -> AsyncStream<State> { store.updates() }

    package func send(_ command: Command) async {
        var s = state
        switch command {
        case let .open(id, asOf, offline):
            s.id = id; s.asOf = asOf; s.offline = offline
        case .reload:
            guard s.id != nil else { return }
        }
        guard let id = s.id else { return }
        let previous = s.content.value
        let point: PointInTime
        do { point = try PointInTime.parse(s.asOf, option: inputs.asOf, quoting: inputs.quoting) } catch {
            s.content = .failed(error, previous: previous)
            store.set(s)
            return
        }
        s.isDownloading = point == .now && !s.offline
        s.content = .loading(previous: previous)
        store.set(s)
        do {
            let r = try await loadDetail(source: s.source, id: id, at: point, offline: s.offline)
            var data = ItemDetailViewData(
                source: r.source, item: r.item, asOf: point == .now ? nil : r.item.changedSeq,
                refreshError: r.refreshError?.message)
            if case .seq(let seq) = point { data.asOf = "seq \(seq)" } else if let a = s.asOf { data.asOf = a }
            data.thumbnail = await thumbnail(for: r.item, settings: thumbnails, items: items)
            s = state
            s.isDownloading = false
            s.content = .loaded(data)
        } catch {
            s = state
            s.isDownloading = false
            s.content = .failed(PresentableError(error), previous: previous)
        }
        store.set(s)
    }
}
