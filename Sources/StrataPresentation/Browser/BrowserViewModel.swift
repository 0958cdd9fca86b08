public import Foundation
public import StrataDomain
import StrataJSON

/// The browser's view model: commands in (``send(_:)`` returns at once), state out
/// (``updates()``). Reads, downloads and refreshes run in tasks of their own, so input stays live
/// while they work; every read goes through the same use cases as the CLI's commands, as of the
/// slider's point.
@MainActor
public final class BrowserViewModel {
    public enum Command: Sendable, Equatable {
        /// Opens on the sources screen, or on a source's list; at a seq or date, or live.
        case start(source: String?, asOf: String?)
        /// The rows a list can show, and whether the detail is shown beside the list.
        case viewport(rows: Int, wide: Bool)
        case move(Int)
        case top, bottom
        /// Enter: a source's list, an item's detail (downloading it first when live).
        case open
        /// Esc: back one screen.
        case back
        case refresh
        case beginPrompt(BrowserState.Prompt.Kind)
        case editPrompt(String)
        case submitPrompt
        case cancelPrompt
        case cycleSort
        /// The slider: one event back (-1) or forward (+1).
        case step(Int)
        /// The slider: the selected item's previous or next change.
        case jumpToChange(forward: Bool)
        case live
        case toggleHelp
        case dismissPopup
        case toggleHistory
        case scrollDetail(Int)
        /// Another process appended: the log's head is now this seq.
        case headMoved(UInt64)
        /// `n`: a prompt for a new item's fields.
        case beginCreate
        /// `e`: a prompt to edit the selected item, prefilled with its first field.
        case beginEdit
        /// Tab (+1) and Shift-Tab (-1) in the edit prompt: the next field as it is now.
        case nextChoice(Int)
        /// `d`: asks before deleting the selected item.
        case beginDelete
        /// The answer to the pop-up's question.
        case answer(Bool)
        /// The staging bar's `a` and `c`: the browser's session accepted or cancelled as one.
        case acceptSession
        case cancelSession
        /// `P`: sends the source's outbox to the API.
        case push
    }

    /// What the view model reads and runs: the app's use cases.
    public struct Dependencies: Sendable {
        public var query: QueryItems
        public var refresh: RefreshSource
        public var loadDetail: LoadItemDetail
        public var history: GetItemHistory
        public var replay: ReplayLog
        public var sources: any SourceRepository
        public var items: any ItemRepository
        public var listThumbnails: ThumbnailSettings?
        public var detailThumbnails: ThumbnailSettings?
        public var now: @Sendable () -> Date
        /// Writes (nil: a read-only browser) and the outbox.
        public var write: WriteItems?
        public var push: PushOutbox?
        /// The edit session `e` stages in.
        public var session: String

        public init(
            query: QueryItems, refresh: RefreshSource, loadDetail: LoadItemDetail, history: GetItemHistory, replay: ReplayLog,
            sources: any SourceRepository, items: any ItemRepository, listThumbnails: ThumbnailSettings? = nil,
            detailThumbnails: ThumbnailSettings? = nil, now: @escaping @Sendable () -> Date = { Date() },
            write: WriteItems? = nil, push: PushOutbox? = nil, session: String = "browse"
        ) {
            self.query = query; self.refresh = refresh; self.loadDetail = loadDetail; self.history = history; self.replay = replay
            self.sources = sources; self.items = items; self.listThumbnails = listThumbnails; self.detailThumbnails = detailThumbnails
            self.now = now; self.write = write; self.push = push; self.session = session
        }
    }

    private let deps: Dependencies
    private let store: StateStore<BrowserState>
    private var loaded: [Item] = []
    private var rootScreen: BrowserState.Screen = .sources
    private var wide = false
    private var pausedHead: UInt64 = 0
    private var sourceModel: Source?
    private var sortChoice = 0
    /// Running work by purpose: a new one of a kind replaces (cancels) the old.
    private var tasks: [String: Task<Void, Never>] = [:]
    private var generation: [String: Int] = [:]
    /// Counts the user's cursor moves: a reload that started before one keeps the row the user
    /// moved to, not the one selected when it started.
    private var moves = 0

    public init(dependencies: Dependencies) {
        deps = dependencies
        store = StateStore(BrowserState())
    }

    public var state: BrowserState { store.value }
    public func updates() -> AsyncStream<BrowserState> { store.updates() }
    /// Whether there is a screen to go back to; false means `q` quits.
    public var canGoBack: Bool { state.screen != rootScreen }

    /// Waits until no work runs (tests; the app never waits).
    public func settle() async {
        while let task = tasks.values.first {
            await task.value
            tasks = tasks.filter { $0.value != task }
        }
    }

    private func update(_ change: (inout BrowserState) -> Void) {
        var s = store.value
        change(&s)
        if s != store.value { store.set(s) }
    }

    /// Starts `work` as the one task of `kind`, cancelling the previous one; its state changes
    /// are dropped if a newer task of the kind started meanwhile.
    private func run(_ kind: String, _ work: @escaping @MainActor (_ isCurrent: @escaping @MainActor () -> Bool) async -> Void) {
        tasks[kind]?.cancel()
        let g = (generation[kind] ?? 0) + 1
        generation[kind] = g
        let task = Task { @MainActor [weak self] in
            await work { self?.generation[kind] == g && !Task.isCancelled }
            if let self, self.generation[kind] == g { self.tasks[kind] = nil }
        }
        tasks[kind] = task
    }

    public func send(_ command: Command) {
        switch command {
        case let .start(source, asOf):
            if let source {
                rootScreen = .list
                update {
                    $0.screen = .list; $0.source = source
                }
            }
            loadSources()
            if source != nil { openSource() }
            if let asOf { setPoint(text: asOf) }
        case let .viewport(rows, isWide):
            wide = isWide
            update { s in
                s.viewportRows = max(1, rows)
                Self.clampScroll(&s)
            }
            afterMove()
        case .move(let delta):
            moveCursor { $0 + delta }
        case .top:
            moveCursor { _ in 0 }
        case .bottom:
            moveCursor { _ in Int.max }
        case .open:
            open()
        case .back:
            back()
        case .refresh:
            refresh()
        case .beginPrompt(let kind):
            update { $0.prompt = BrowserState.Prompt(kind: kind, text: kind == .filter ? $0.filterText : "") }
        case .editPrompt(let text):
            update { $0.prompt?.text = text }
        case .cancelPrompt:
            update { $0.prompt = nil }
        case .submitPrompt:
            submitPrompt()
        case .cycleSort:
            cycleSort()
        case .step(let delta):
            step(delta)
        case .jumpToChange(let forward):
            jumpToChange(forward: forward)
        case .live:
            guard state.point != nil else { return }
            update {
                $0.point = nil; $0.newEvents = 0; $0.status = "live"
            }
            reloadAll()
        case .toggleHelp:
            update { $0.showHelp.toggle() }
        case .dismissPopup:
            update { $0.popup = nil }
        case .toggleHistory:
            update {
                $0.showHistory.toggle(); $0.detailScroll = 0
            }
        case .scrollDetail(let delta):
            update { $0.detailScroll = max(0, $0.detailScroll + delta) }
        case .headMoved(let head):
            headMoved(head)
        case .beginCreate:
            beginCreate()
        case .beginEdit:
            beginEdit()
        case .nextChoice(let delta):
            update { s in
                guard var p = s.prompt, !p.choices.isEmpty else { return }
                p.choice = ((p.choice + delta) % p.choices.count + p.choices.count) % p.choices.count
                p.text = p.choices[p.choice]
                s.prompt = p
            }
        case .beginDelete:
            beginDelete()
        case .answer(let yes):
            answer(yes)
        case .acceptSession:
            acceptSession()
        case .cancelSession:
            cancelSession()
        case .push:
            pushOutbox()
        }
    }

    // MARK: Sources

    private func loadSources() {
        let deps = deps
        run("sources") { [weak self] isCurrent in
            do {
                let sources = try await deps.sources.sources()
                var rows: [BrowserState.SourceRow] = []
                for s in sources {
                    let total = try await deps.query(ItemQuery(source: s.name, limit: 1)).page.total
                    rows.append(Self.sourceRow(s, items: total, now: deps.now()))
                }
                let head = try await deps.replay.resolve(.now)
                guard isCurrent(), let self else { return }
                self.update { st in
                    st.sources = rows
                    st.sourceCursor = min(st.sourceCursor, max(0, rows.count - 1))
                    if st.head == 0 { st.head = head }
                }
                if self.pausedHead == 0 { self.pausedHead = head }
            } catch {
                self?.show(error, title: "Could not read the sources")
            }
        }
    }

    static func sourceRow(_ s: Source, items: Int, now: Date) -> BrowserState.SourceRow {
        let data = SourceViewData(source: s)
        let last: String, failed: Bool
        switch data.freshness {
        case .never: last = "never fetched"; failed = false
        case .fetched(let at, _): last = "fetched \(at)"; failed = false
        case .failed(let at, let error, _): last = "failed \(at): \(error)"; failed = true
        }
        let age = s.lastSuccess.map { AgeText.format(now.timeIntervalSince($0.at)) } ?? "-"
        return BrowserState.SourceRow(source: data, items: items, lastFetch: last, failed: failed, age: age)
    }

    // MARK: The list

    private var pageSize: Int { max(50, state.viewportRows * 2) }

    private func openSource() {
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

    private var pointInTime: PointInTime { state.point.map { .seq($0) } ?? .now }

    private func query(limit: Int, after: String? = nil, offset: Int = 0) throws -> ItemQuery {
        var q = try ItemQuery(source: state.source ?? "", filter: state.filter)
        q.limit = limit
        q.after = after
        q.offset = offset
        q.at = pointInTime
        q.includeRemoved = state.point != nil
        return q
    }

    /// Reads the list again from its top (as many rows as are loaded, at least a page), keeping the
    /// cursor on the same item when it is still there.
    private func loadList(keepID: String?) {
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
        run("list") { [weak self] isCurrent in
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
    private func loadMoreIfNeeded() {
        let s = state
        guard s.screen == .list || wide, s.hasMore, !s.isLoading, tasks["more"] == nil,
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
        run("more") { [weak self] isCurrent in
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

    private func moveCursor(_ to: (Int) -> Int) {
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

    private func afterMove() {
        guard state.screen == .list else { return }
        let s = state
        if tasks["list"] == nil, s.rows[s.top..<min(s.rows.count, s.top + s.viewportRows)].contains(where: \.stale) {
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
    private func fillThumbnails() {
        guard let settings = deps.listThumbnails, sourceModel?.imagePath != nil else { return }
        let s = state
        let range = s.top..<min(s.rows.count, s.top + s.viewportRows + 4)
        let wanted = range.filter { s.rows[$0].item.thumbnail == nil && loaded.indices.contains($0) }.map { loaded[$0] }
        guard !wanted.isEmpty else { return }
        let items = deps.items
        run("thumbnails") { [weak self] isCurrent in
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

    // MARK: Detail

    private func open() {
        switch state.screen {
        case .sources:
            guard state.sources.indices.contains(state.sourceCursor) else { return }
            let name = state.sources[state.sourceCursor].source.name
            update { $0.source = name }
            openSource()
        case .list:
            guard let id = state.selectedRow?.item.id else { return }
            update {
                $0.screen = .detail; $0.detailScroll = 0; $0.showHistory = false
            }
            loadDetail(id: id, download: state.isLive)
        case .detail:
            break
        }
    }

    private func back() {
        switch state.screen {
        case .detail:
            update {
                $0.screen = .list; $0.isDownloading = false
            }
            tasks["detail"]?.cancel()
        case .list where rootScreen == .sources:
            update { $0.screen = .sources }
            loadSources()
        default:
            break
        }
    }

    /// Reads an item's detail (downloading it first when asked), then its history up to the
    /// slider's point and the changes it had at that point.
    private func loadDetail(id: String, download: Bool) {
        guard let source = state.source else { return }
        let deps = deps, point = pointInTime, pointSeq = state.point
        let online = download && (sourceModel?.hasDetails ?? true)
        update { s in
            s.detailID = id
            s.isDownloading = online
            if s.detail?.id != id { s.detail = nil; s.history = nil; s.changesAtPoint = [] }
        }
        run("detail") { [weak self] isCurrent in
            do {
                let r = try await deps.loadDetail(source: source, id: id, at: point, offline: !online)
                var data = ItemDetailViewData(source: r.source, item: r.item, asOf: pointSeq, refreshError: r.refreshError?.message)
                if let pointSeq { data.asOf = "seq \(pointSeq)" }
                data.thumbnail = await thumbnail(for: r.item, settings: deps.detailThumbnails, items: deps.items)
                let history = try? await deps.history(source: source, id: id, upTo: point)
                guard isCurrent(), let self else { return }
                self.update { s in
                    s.detail = data
                    s.isDownloading = false
                    s.history = history.map { HistoryViewData(source: r.source, id: id, versions: $0.versions) }
                    if let pointSeq, let last = history?.versions.last, last.seq == pointSeq {
                        s.changesAtPoint = last.changes.map(ChangeViewData.init(change:))
                    } else {
                        s.changesAtPoint = []
                    }
                    if let e = r.refreshError, online {
                        s.popup = BrowserState.Popup(
                            title: "Download failed", message: e.message,
                            hint: "The stored detail is shown. Enter closes this; r on the list refreshes.")
                    }
                }
            } catch let e as RepositoryError where e.code == .notFound && pointSeq != nil {
                // Not there yet at the slider's point: an empty pane, no pop-up.
                guard isCurrent(), let self else { return }
                self.update { s in
                    s.isDownloading = false; s.detail = nil; s.history = nil; s.changesAtPoint = []
                    s.status = "\(id) did not exist at seq \(pointSeq!)"
                }
            } catch {
                guard isCurrent(), let self else { return }
                self.update {
                    $0.isDownloading = false; $0.changesAtPoint = []
                }
                self.show(error, title: "Could not open \(id)")
            }
        }
    }

    // MARK: Refresh

    private func refresh() {
        guard let source = state.source ?? (state.sources.indices.contains(state.sourceCursor) ? state.sources[state.sourceCursor].source.name : nil),
            !state.isRefreshing
        else { return }
        let deps = deps, images = sourceModel?.imagePath != nil
        update {
            $0.isRefreshing = true; $0.refreshProgress = "fetching \(source)…"; $0.status = nil
        }
        run("refresh") { [weak self] _ in
            do {
                let r = try await deps.refresh(source, details: false, images: images)
                guard let self else { return }
                var message = "fetched \(r.pages) page\(r.pages == 1 ? "" : "s"): \(r.added) added, \(r.changed) changed, \(r.removed) removed"
                if !r.failures.isEmpty { message += "; \(r.failures.count) request\(r.failures.count == 1 ? "" : "s") failed" }
                self.update {
                    $0.isRefreshing = false; $0.refreshProgress = nil; $0.status = message
                }
                if !r.failures.isEmpty {
                    self.update {
                        $0.popup = BrowserState.Popup(
                            title: "Some requests failed", message: r.failures.first ?? "",
                            hint: "Everything else was stored. Enter closes this; r tries again.")
                    }
                }
            } catch {
                guard let self else { return }
                self.update {
                    $0.isRefreshing = false; $0.refreshProgress = nil; $0.status = "refresh failed; showing stored data"
                }
                self.show(error, title: "Refresh failed", hint: "The stored data is still shown. Enter closes this; r tries again.")
            }
            self?.reloadAll()
        }
    }

    // MARK: Prompts, filter, sort

    private func submitPrompt() {
        guard let prompt = state.prompt else { return }
        update { $0.prompt = nil }
        switch prompt.kind {
        case .filter:
            let text = prompt.text.trimmingCharacters(in: .whitespaces)
            update { s in
                s.filterText = text
                s.filter.wheres = text.contains("=") ? [text] : []
                s.filter.search = text.contains("=") || text.isEmpty ? nil : text
                s.cursor = 0; s.top = 0
            }
            loadList(keepID: nil)
        case .point:
            setPoint(text: prompt.text.trimmingCharacters(in: .whitespaces))
        case .create:
            create(prompt.text)
        case .edit(let id):
            edit(id, prompt.text)
        }
    }

    private func cycleSort() {
        let options: [String?] = [nil] + state.columns.flatMap { [$0, "-" + $0] }
        sortChoice = (sortChoice + 1) % options.count
        let sort = options[sortChoice]
        update {
            $0.filter.sort = sort; $0.status = sort.map { "sorted by \($0)" } ?? "sorted by id"; $0.cursor = 0; $0.top = 0
        }
        loadList(keepID: nil)
    }

    // MARK: The slider

    private func loadTimeline(_ source: String) {
        let deps = deps
        run("timeline") { [weak self] isCurrent in
            guard let entries = try? await deps.replay(LogQuery(stream: source, limit: 1_000_000, newestFirst: false)), isCurrent(), let self else { return }
            self.update { s in
                s.timeline = entries.map { BrowserState.Mark(seq: $0.seq, type: $0.type, isFailure: $0.isFailure, time: TimeText.format($0.recordedAt)) }
            }
        }
    }

    private func setPoint(text: String) {
        guard !text.isEmpty else { return }
        let deps = deps
        run("point") { [weak self] _ in
            do {
                let parsed = try PointInTime.parse(text, option: "the point")
                let seq = try await deps.replay.resolve(parsed)
                self?.move(to: seq)
            } catch {
                self?.show(error, title: "Not a point of the log", hint: "Type a seq (42) or a date (2026-03-01 or 2026-03-01T09:00:00Z).")
            }
        }
    }

    private func step(_ delta: Int) {
        let current = state.pointSeq
        let marks = state.timeline
        guard !marks.isEmpty else { return }
        if delta < 0 {
            guard let previous = marks.last(where: { $0.seq < current }) else {
                update { $0.status = "at the first event of \($0.source ?? "the source")" }
                return
            }
            move(to: previous.seq)
        } else {
            guard state.point != nil else { return }
            if let next = marks.first(where: { $0.seq > current }) {
                move(to: next.seq)
            } else {
                send(.live)
            }
        }
    }

    private func jumpToChange(forward: Bool) {
        guard let source = state.source, let id = state.screen == .detail ? state.detailID : state.selectedRow?.item.id else { return }
        let deps = deps, current = state.pointSeq
        run("point") { [weak self] _ in
            guard let versions = try? await deps.history(source: source, id: id, upTo: .now).versions, let self else { return }
            let target = forward ? versions.first { $0.seq > current } : versions.last { $0.seq < current }
            if let target {
                self.move(to: target.seq)
            } else {
                self.update { $0.status = forward ? "no later change of \(id)" : "no earlier change of \(id)" }
            }
        }
    }

    /// Puts the slider at `seq` and reads every screen as of it.
    private func move(to seq: UInt64) {
        if state.point == nil { pausedHead = state.head }
        update { s in
            s.point = seq
            s.newEvents = Int(s.head > pausedHead ? s.head - pausedHead : 0)
            let mark = s.timeline.first { $0.seq == seq }
            s.status = "as of seq \(seq)" + (mark.map { " · \($0.type) · \($0.time)" } ?? "")
        }
        reloadAll()
    }

    /// Reads the current screen again (the slider moved, a refresh ended, the head moved).
    /// `keepingDetailLoad`: a detail that is loading already is left to finish (it reads the
    /// store after its download, which is usually what moved the head), so its outcome — a
    /// failed download's pop-up among it — is not dropped.
    private func reloadAll(keepingDetailLoad: Bool = false) {
        switch state.screen {
        case .sources:
            loadSources()
        case .list, .detail:
            loadList(keepID: state.selectedRow?.item.id)
            loadWriteState()
            let detailLoading = keepingDetailLoad && tasks["detail"] != nil
            if state.screen == .detail || wide, let id = state.detailID, !detailLoading { loadDetail(id: id, download: false) }
            if state.screen == .detail, state.detailID == nil { update { $0.screen = .list } }
        }
    }

    private func headMoved(_ head: UInt64) {
        guard head != state.head else { return }
        update { s in
            s.head = head
            if s.point != nil { s.newEvents = Int(head > pausedHead ? head - pausedHead : 0) }
        }
        if let source = state.source { loadTimeline(source) }
        if state.isLive { reloadAll(keepingDetailLoad: true) }
    }

    // MARK: Writes

    /// The source's name when writes can be made now: live (the past is read-only), with the
    /// source taking `what` (else the status says which flag would make it do so).
    private func writableSource(_ allowed: Bool, _ what: String, flag: String) -> String? {
        guard deps.write != nil, let source = state.source, state.screen != .sources else { return nil }
        guard state.isLive else {
            update { $0.status = "the past is read-only: L returns to live, then \(what)" }
            return nil
        }
        guard allowed else {
            update { $0.status = "\(source) takes no \(what): `strata source change \(source) \(flag) URL`" }
            return nil
        }
        return source
    }

    /// The item the user means: the detail's, else the selected row's.
    private var selectedID: String? { state.screen == .detail ? state.detailID : state.selectedRow?.item.id }

    private func beginCreate() {
        guard writableSource(state.writes.create, "new items", flag: "--create-url") != nil else { return }
        update { $0.prompt = BrowserState.Prompt(kind: .create, text: "") }
    }

    private func beginEdit() {
        guard writableSource(state.writes.edit, "edits", flag: "--update-url") != nil, let id = selectedID else { return }
        let item = loaded.first { $0.id == id }
        let document = stagedDocuments[id] ?? item?.document ?? .object([:])
        let choices = Self.editChoices(document, source: sourceModel)
        update { $0.prompt = BrowserState.Prompt(kind: .edit(id: id), text: choices.first ?? "", choices: choices) }
    }

    /// `field=value` for every top-level field of `document` (nested ones as JSON): the title,
    /// subtitle and indexed fields first, then the rest by name.
    static func editChoices(_ document: JSONValue, source: Source?) -> [String] {
        guard case .object(let o) = document else { return [] }
        var paths: [String] = []
        if let title = source?.titlePath { paths.append(title) }
        paths += source?.subtitlePaths ?? []
        paths += source?.indexPaths ?? []
        paths += JSONValue.sortedKeys(o)
        var seen = Set<String>()
        var choices: [String] = []
        for path in paths where seen.insert(path).inserted {
            if let value = document.value(atPath: path) { choices.append("\(path)=\(ItemEdit.editable(value))") }
        }
        return choices
    }

    private func create(_ text: String) {
        guard let source = state.source, let write = deps.write else { return }
        run("write") { [weak self] _ in
            do {
                let doc = try ItemEdit.line(text).applied(to: .object([:]))
                let (_, id) = try await write.create(source: source, document: doc)
                self?.wrote("created \(id)", keep: id)
            } catch {
                self?.show(error, title: "Not created", hint: "Nothing was written. Enter closes this; n tries again.")
            }
        }
    }

    private func edit(_ id: String, _ text: String) {
        guard let source = state.source, let write = deps.write else { return }
        let session = deps.session
        run("write") { [weak self] _ in
            do {
                let (seq, changes) = try await write.edit(source: source, id: id, try ItemEdit.line(text), session: session)
                let what = changes.map { ChangeViewData(change: $0).text }.joined(separator: ", ")
                guard let self else { return }
                self.update { $0.status = seq == nil ? "no change to \(id): it already looks like that" : "staged \(id): \(what)" }
                self.loadWriteState()
            } catch {
                self?.show(error, title: "Not staged", hint: "Nothing was written. Enter closes this; e tries again.")
            }
        }
    }

    private func beginDelete() {
        guard writableSource(state.writes.delete, "deletes", flag: "--delete-url") != nil, let id = selectedID else { return }
        let title = loaded.first { $0.id == id }?.title ?? id
        update {
            $0.popup = BrowserState.Popup(
                title: "Delete \(id)?", message: title == id ? id : "\(id) · \(title)",
                hint: "y deletes it here at once (pending: P sends it); n keeps it.", question: .delete(ids: [id]))
        }
    }

    private func answer(_ yes: Bool) {
        guard let question = state.popup?.question else { return }
        update { $0.popup = nil }
        guard yes, let source = state.source, let write = deps.write else { return }
        switch question {
        case .delete(let ids):
            run("write") { [weak self] _ in
                do {
                    _ = try await write.delete(source: source, ids: ids)
                    self?.wrote("deleted \(ids.joined(separator: ", "))", keep: nil)
                } catch {
                    self?.show(error, title: "Not deleted", hint: "Nothing was written. Enter closes this.")
                }
            }
        }
    }

    private func acceptSession() {
        guard let write = deps.write, state.staging != nil else { return }
        let session = deps.session
        run("write") { [weak self] _ in
            do {
                let seqs = try await write.accept(session)
                self?.stagedDocuments = [:]
                self?.update { $0.staging = nil }
                self?.wrote("accepted \(seqs.count) patch\(seqs.count == 1 ? "" : "es")", keep: self?.selectedID)
            } catch {
                self?.show(error, title: "Not accepted", hint: "The edits stay staged. Enter closes this.")
            }
        }
    }

    private func cancelSession() {
        guard let write = deps.write, state.staging != nil else { return }
        let session = deps.session
        run("write") { [weak self] _ in
            do {
                let n = try await write.cancel(session)
                guard let self else { return }
                // The bar goes with the summary, in one state; the session read after confirms it.
                self.stagedDocuments = [:]
                self.update {
                    $0.staging = nil; $0.status = "cancelled: \(n) staged edit\(n == 1 ? "" : "s") discarded"
                }
                self.loadWriteState()
            } catch {
                self?.show(error, title: "Not cancelled", hint: "Enter closes this.")
            }
        }
    }

    /// After a write: the list and detail read again (the write shows at once, pending).
    private func wrote(_ what: String, keep id: String?) {
        update { $0.status = "\(what) (pending; P sends it)" }
        loadList(keepID: id ?? state.selectedRow?.item.id)
        if state.screen == .detail || wide, let id = state.detailID { loadDetail(id: id, download: false) }
        loadWriteState()
    }

    private func pushOutbox() {
        guard let push = deps.push, let source = state.source, !state.isPushing else { return }
        update {
            $0.isPushing = true; $0.refreshProgress = "sending the outbox of \(source)…"; $0.status = nil
        }
        run("push") { [weak self] _ in
            do {
                let report = try await push([source]).first
                guard let self else { return }
                // The count comes with the summary: the bar never says "pushed" beside writes still to push.
                self.update {
                    $0.isPushing = false; $0.refreshProgress = nil; $0.status = report.map(Self.pushSummary) ?? "nothing to send"
                    if let report { $0.outbox = report.left }
                }
                if let report, let bad = report.outcomes.first(where: { $0.result == .conflicted || $0.result == .rejected }) {
                    self.update {
                        $0.popup = BrowserState.Popup(
                            title: bad.result == .conflicted ? "A write conflicts" : "A write was rejected",
                            message: "\(bad.kind.rawValue) \(bad.itemID): \(bad.message)",
                            hint: "It is kept. `strata outbox \(source)` shows both sides; `strata outbox retry|drop \(bad.write)` decides. Enter closes this.")
                    }
                }
            } catch {
                guard let self else { return }
                self.update {
                    $0.isPushing = false; $0.refreshProgress = nil; $0.status = "push failed; the writes stay pending"
                }
                self.show(error, title: "Push failed", hint: "Nothing was lost: the writes stay pending. Enter closes this; P tries again.")
            }
            self?.reloadAll()
        }
    }

    static func pushSummary(_ r: PushReport) -> String {
        if let offline = r.offline { return "offline (\(offline)): \(r.left) write\(r.left == 1 ? "" : "s") stay pending" }
        guard !r.outcomes.isEmpty else { return "nothing to send" }
        let counts = Dictionary(grouping: r.outcomes, by: \.result).mapValues(\.count)
        let parts = [PushReport.Outcome.Result.acknowledged, .conflicted, .rejected, .failed].compactMap { k in counts[k].map { "\($0) \(k.rawValue)" } }
        return "pushed: " + parts.joined(separator: ", ") + (r.left > 0 ? "; \(r.left) left" : "")
    }

    /// Staged documents of the browser's session by item id: `e` starts from what was staged.
    private var stagedDocuments: [String: JSONValue] = [:]

    /// Reads the browser's session and the source's open writes (the staging bar, the title).
    private func loadWriteState() {
        guard let write = deps.write, let source = state.source else { return }
        let push = deps.push, session = deps.session
        run("writeState") { [weak self] isCurrent in
            let s = try? await write.session(session)
            let open = (try? await push?.outbox(source: source, all: false))?.count ?? 0
            guard isCurrent(), let self else { return }
            let items = s?.state == .open ? s!.items.filter { !$0.changes.isEmpty } : []
            self.stagedDocuments = Dictionary(items.filter { $0.source == source }.map { ($0.itemID, $0.result) }, uniquingKeysWith: { a, _ in a })
            self.update { st in
                st.outbox = open
                st.staging =
                    items.isEmpty
                    ? nil
                    : BrowserState.Staging(
                        session: session, changes: items.reduce(0) { $0 + $1.changes.count }, items: items.count,
                        byID: Dictionary(
                            items.filter { $0.source == source }.map { ($0.itemID, $0.changes.map(ChangeViewData.init(change:))) },
                            uniquingKeysWith: { a, _ in a }))
            }
        }
    }

    // MARK: Errors

    private func show(_ error: any Error, title: String, hint: String = "Enter closes this.") {
        let e = PresentableError(error)
        update { $0.popup = BrowserState.Popup(title: title, message: e.message, hint: hint) }
    }
}

/// "3s", "5m", "2h", "4d": how long ago, for the staleness column.
enum AgeText {
    static func format(_ seconds: TimeInterval) -> String {
        let s = max(0, Int(seconds))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" }
        if s < 86400 { return "\(s / 3600)h" }
        return "\(s / 86400)d"
    }
}
