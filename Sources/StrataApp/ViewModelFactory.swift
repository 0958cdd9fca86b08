package import StrataDomain
package import StrataPresentation

/// Makes the screens' view models from the resolved use cases. Resolved once at the root, then
/// passed by value; view models are created on the main actor where they live.
package struct ViewModelFactory: Sendable {
    let query: QueryItems
    let refresh: RefreshSource
    let loadDetail: LoadItemDetail
    let history: GetItemHistory
    let diff: DiffCollection
    let replay: ReplayLog
    let items: any ItemRepository
    let sources: any SourceRepository
    let thumbnails: ThumbnailSettings?
    let write: WriteItems
    let push: PushOutbox

    // `inputs`: how the front end names its inputs, for problems with them.

    @MainActor package func itemList(source: String, filter: FilterViewData, inputs: FilterInputNames) -> ItemListViewModel {
        ItemListViewModel(source: source, filter: filter, query: query, refresh: refresh, items: items, thumbnails: thumbnails, inputs: inputs)
    }

    @MainActor package func itemDetail(source: String, inputs: FilterInputNames) -> ItemDetailViewModel {
        ItemDetailViewModel(source: source, loadDetail: loadDetail, items: items, thumbnails: thumbnails, inputs: inputs)
    }

    @MainActor package func itemHistory(source: String, inputs: FilterInputNames) -> ItemHistoryViewModel {
        ItemHistoryViewModel(source: source, history: history, inputs: inputs)
    }

    @MainActor package func collectionDiff(source: String, inputs: FilterInputNames) -> CollectionDiffViewModel {
        CollectionDiffViewModel(source: source, diff: diff, sources: sources, inputs: inputs)
    }

    /// The browser's view model: every screen through the same use cases as the commands, list
    /// thumbnails at `listThumbnail` cells and the detail's at `detailThumbnail`; edits staged in
    /// `session`.
    @MainActor package func browser(
        listThumbnail: (columns: Int, rows: Int), detailThumbnail: (columns: Int, rows: Int),
        session: String = "browse", wording: FrontEndWording = .plain
    ) -> BrowserViewModel {
        BrowserViewModel(
            dependencies: .init(
                query: query, refresh: refresh, loadDetail: loadDetail, history: history, replay: replay, sources: sources, items: items,
                listThumbnails: thumbnails.map { ThumbnailSettings(renderer: $0.renderer, columns: listThumbnail.columns, rows: listThumbnail.rows) },
                detailThumbnails: thumbnails.map { ThumbnailSettings(renderer: $0.renderer, columns: detailThumbnail.columns, rows: detailThumbnail.rows) },
                write: write, push: push, session: session, wording: wording
            ))
    }

    /// The event log's view model over the store's log, or over `replay` (a team log's).
    @MainActor package func eventLog(replay other: ReplayLog? = nil) -> EventLogViewModel {
        EventLogViewModel(replay: other ?? replay)
    }
}
