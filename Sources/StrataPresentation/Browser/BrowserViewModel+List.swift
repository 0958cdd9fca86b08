import Foundation
import StrataDomain
import StrataJSON

// The list: its query, paging as the cursor moves, and thumbnails.
extension BrowserViewModel {
    var pageSize: Int { max(50, state.viewportRows * 2) }

    func openSource() {
        guard let name = state.source else { return }
        update { s in
            s.screen = .list; s.rows = []; s.cursor = 0; s.top = 0; s.total = 0; s.detail = nil; s.detailID = nil
            s.filter = FilterViewData(); s.filterText = ""
        }
        sortChoice = 0
        loaded = []
        loadTimeline(name)
        loadList(keepID: nil)
        loadWriteState()
    }

    var pointInTime: PointInTime { state.point.map { .seq($0) } ?? .now }

    func query(limit: Int, after: String? = nil, offset: Int = 0) throws -> ItemQuery {
        var q = try ItemQuery(source: state.source ?? "", filter: state.filter, naming: .browser)
        q.limit = limit
        q.after = after
        q.offset = offset
        q.at = pointInTime
        q.includeRemoved = state.point != nil
        return q
    }

    /// Reads the list again from its top (as many rows as are loaded, at least a page), keeping the
    /// cursor on the same item when it is still there.
    func loadList(keepID: String?) {
        let deps = deps
        // The rows on screen and a page beyond them are read; rows further up are kept, marked
        // stale, and read again when they come into view. So a slider step deep in a long list
        // costs what the screen shows, not every row above it.
        let from = state.top > pageSize ? state.top - pageSize / 2 : 0
        let count = max(pageSize, state.viewportRows + pageSize)
        let q: ItemQuery
        do { q = try query(limit: count, offset: from) } catch { show(error, title: "Bad filter"); return }
        update { $0.isLoading = true }
        let movesAtStart = moves
        run(.list) { [weak self] isCurrent in
            do {
                let result = try await deps.query(q)
                guard isCurrent(), let self else { return }
                let keepID = self.moves == movesAtStart ? keepID : self.state.selectedRow?.item.id
                self.sourceModel = result.source
                let kept = min(from, self.loaded.count, self.state.rows.count)
                self.loaded = Array(self.loaded.prefix(kept)) + result.page.items
                self.update { s in
                    s.sourceData = SourceViewData(source: result.source)
                    s.writes = BrowserState.Writes(
                        create: result.source.createURL != nil, edit: result.source.updateURL != nil,
                        delete: result.source.deleteURL != nil)
                    s.columns = result.source.indexPaths
                    s.hasImages = result.source.imagePath != nil
                    s.rows =
                        s.rows.prefix(kept).map {
                            var r = $0; r.stale = true; return r
                        } + result.page.items.map(Self.row)
                    s.total = result.page.total
                    s.usedIndex = result.page.usedIndex
                    s.hasMore = result.page.items.count == count && kept + result.page.items.count < result.page.total
                    s.isLoading = false
                    if let keepID, let i = s.rows[kept...].firstIndex(where: { $0.item.id == keepID }) { s.cursor = i }
                    s.cursor = min(s.cursor, max(0, s.rows.count - 1))
                    Self.clampScroll(&s)
                }
                self.afterMove()
            } catch {
                guard isCurrent(), let self else { return }
                self.update { $0.isLoading = false }
                self.show(error, title: "Could not read \(q.source)")
            }
        }
    }

    /// Loads the next page when the cursor nears the end of what is loaded ("ten, then more").
    func loadMoreIfNeeded() {
        let s = state
        guard s.screen == .list || wide, s.hasMore, !s.isLoading, tasks[.more] == nil,
            s.cursor >= s.rows.count - max(10, s.viewportRows)
        else { return }
        let deps = deps
        let q: ItemQuery
        do {
            // A plain page (the domain's `isPlainPage`) continues after the last id, a cursor
            // seek; other queries by offset.
            let next = try query(limit: pageSize, offset: s.rows.count)
            q = next.isPlainPage ? try query(limit: pageSize, after: loaded.last?.id) : next
        } catch { return }
        run(.more) { [weak self] isCurrent in
            guard let result = try? await deps.query(q), isCurrent(), let self else { return }
            let known = Set(self.loaded.map(\.id))
            let fresh = result.page.items.filter { !known.contains($0.id) }
            self.loaded += fresh
            self.update { s in
                s.rows += fresh.map(Self.row)
                s.total = result.page.total
                s.hasMore = !fresh.isEmpty && s.rows.count < result.page.total
            }
            self.fillThumbnails()
        }
    }

    static func row(_ item: Item) -> BrowserState.Row {
        BrowserState.Row(item: ItemRowViewData(item: item), changedSeq: item.changedSeq)
    }

    func moveCursor(_ to: (Int) -> Int) {
        moves += 1
        update { s in
            switch s.screen {
            case .sources:
                s.sourceCursor = max(0, min(max(0, s.sources.count - 1), to(s.sourceCursor)))
            case .list:
                s.cursor = max(0, min(max(0, s.rows.count - 1), to(s.cursor)))
                Self.clampScroll(&s)
            case .detail:
                let delta = to(0)
                s.detailScroll = delta == Int.max ? Int.max / 2 : max(0, s.detailScroll + delta)
            }
        }
        afterMove()
    }

    static func clampScroll(_ s: inout BrowserState) {
        if s.cursor < s.top { s.top = s.cursor }
        if s.cursor >= s.top + s.viewportRows { s.top = s.cursor - s.viewportRows + 1 }
        s.top = max(0, min(s.top, max(0, s.rows.count - s.viewportRows)))
    }

    func afterMove() {
        guard state.screen == .list else { return }
        let s = state
        if tasks[.list] == nil, s.rows[s.top..<min(s.rows.count, s.top + s.viewportRows)].contains(where: \.stale) {
            // Rows kept from before a reload came into view: read them as of the current point.
            loadList(keepID: s.selectedRow?.item.id)
            return
        }
        loadMoreIfNeeded()
        fillThumbnails()
        if wide, let id = state.selectedRow?.item.id, id != state.detailID { loadDetail(id: id, download: false) }
    }

    /// Draws thumbnails for the rows on screen that have none yet (after the frame that shows
    /// the rows, so the first frame never waits for images).
    func fillThumbnails() {
        guard let settings = deps.listThumbnails, sourceModel?.imagePath != nil else { return }
        let s = state
        let range = s.top..<min(s.rows.count, s.top + s.viewportRows + 4)
        let wanted = range.filter { s.rows[$0].item.thumbnail == nil && loaded.indices.contains($0) }.map { loaded[$0] }
        guard !wanted.isEmpty else { return }
        let items = deps.items
        run(.thumbnails) { [weak self] isCurrent in
            var drawn: [String: [String]] = [:]
            for item in wanted {
                if let t = await thumbnail(for: item, settings: settings, items: items) { drawn[item.id] = t }
            }
            guard isCurrent(), let self, !drawn.isEmpty else { return }
            self.update { s in
                for i in s.rows.indices { if let t = drawn[s.rows[i].item.id] { s.rows[i].item.thumbnail = t } }
            }
        }
    }
}
