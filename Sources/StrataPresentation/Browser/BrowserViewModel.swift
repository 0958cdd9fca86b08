package import Foundation
package import StrataDomain
import StrataJSON

/// The browser's view model: commands in (``send(_:)`` returns at once), state out
/// (``updates()``). Reads, downloads and refreshes run in tasks of their own, so input stays live
/// while they work; every read goes through the same use cases as the CLI's commands, as of the
/// slider's point.
@MainActor
package final class BrowserViewModel {
    package enum Command: Sendable, Equatable {
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
    package struct Dependencies: Sendable {
        package var query: QueryItems
        package var refresh: RefreshSource
        package var loadDetail: LoadItemDetail
        package var history: GetItemHistory
        package var replay: ReplayLog
        package var sources: any SourceRepository
        package var items: any ItemRepository
        package var listThumbnails: ThumbnailSettings?
        package var detailThumbnails: ThumbnailSettings?
        package var now: @Sendable () -> Date
        /// Writes (nil: a read-only browser) and the outbox.
        package var write: WriteItems?
        package var push: PushOutbox?
        /// The edit session `e` stages in.
        package var session: String
        /// How the ways out of problems are offered (the terminal's commands, from the CLI).
        package var wording: FrontEndWording

        package init(
            query: QueryItems, refresh: RefreshSource, loadDetail: LoadItemDetail, history: GetItemHistory, replay: ReplayLog,
            sources: any SourceRepository, items: any ItemRepository, listThumbnails: ThumbnailSettings? = nil,
            detailThumbnails: ThumbnailSettings? = nil, now: @escaping @Sendable () -> Date = { Date() },
            write: WriteItems? = nil, push: PushOutbox? = nil, session: String = "browse", wording: FrontEndWording = .plain
        ) {
            self.wording = wording
            self.query = query; self.refresh = refresh; self.loadDetail = loadDetail; self.history = history; self.replay = replay
            self.sources = sources; self.items = items; self.listThumbnails = listThumbnails; self.detailThumbnails = detailThumbnails
            self.now = now; self.write = write; self.push = push; self.session = session
        }
    }

    let deps: Dependencies
    let store: StateStore<BrowserState>
    var loaded: [Item] = []
    var rootScreen: BrowserState.Screen = .sources
    var wide = false
    var pausedHead: UInt64 = 0
    var sourceModel: Source?
    var sortChoice = 0
    /// What a task of the view model works on: a new task of a kind replaces (cancels) the old.
    enum TaskKind: Hashable {
        case sources, list, more, detail, thumbnails, refresh, point, timeline, write, writeState, push
    }

    /// Staged documents of the browser's session by item id: `e` starts from what was staged.
    var stagedDocuments: [String: JSONValue] = [:]
    /// Running work by purpose.
    var tasks: [TaskKind: Task<Void, Never>] = [:]
    var generation: [TaskKind: Int] = [:]
    /// Counts the user's cursor moves: a reload that started before one keeps the row the user
    /// moved to, not the one selected when it started.
    var moves = 0

    package init(dependencies: Dependencies) {
        deps = dependencies
        var initial = BrowserState()
        if let way = dependencies.wording.next(.defineSource) { initial.noSourcesText = "No sources yet: \(way)." }
        store = StateStore(initial)
    }

    package var state: BrowserState { store.value }
    package func updates() -> AsyncStream<BrowserState> { store.updates() }
    /// Whether there is a screen to go back to; false means `q` quits.
    package var canGoBack: Bool { state.screen != rootScreen }

    /// Waits until no work runs (tests; the app never waits).
    package func settle() async {
        while let task = tasks.values.first {
            await task.value
            tasks = tasks.filter { $0.value != task }
        }
    }

    func update(_ change: (inout BrowserState) -> Void) {
        var s = store.value
        change(&s)
        if s != store.value { store.set(s) }
    }

    /// Starts `work` as the one task of `kind`, cancelling the previous one; its state changes
    /// are dropped if a newer task of the kind started meanwhile.
    func run(_ kind: TaskKind, _ work: @escaping @MainActor (_ isCurrent: @escaping @MainActor () -> Bool) async -> Void) {
        tasks[kind]?.cancel()
        let g = (generation[kind] ?? 0) + 1
        generation[kind] = g
        let task = Task { @MainActor [weak self] in
            await work { self?.generation[kind] == g && !Task.isCancelled }
            if let self, self.generation[kind] == g { self.tasks[kind] = nil }
        }
        tasks[kind] = task
    }

    package func send(_ command: Command) {
        switch command {
        case let .start(source, asOf):
            if let source {
                rootScreen = .list
                update { $0.openList(of: source) }
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
            update { $0.beginPrompt(kind) }
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
            update { $0.goLive() }
            reloadAll()
        case .toggleHelp:
            update { $0.showHelp.toggle() }
        case .dismissPopup:
            update { $0.popup = nil }
        case .toggleHistory:
            update { $0.toggleHistory() }
        case .scrollDetail(let delta):
            update { $0.scrollDetail(by: delta) }
        case .headMoved(let head):
            headMoved(head)
        case .beginCreate:
            beginCreate()
        case .beginEdit:
            beginEdit()
        case .nextChoice(let delta):
            update { $0.nextChoice(delta) }
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
