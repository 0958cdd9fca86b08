import StrataDomain

/// Everything the browser shows, as plain values: the screen, each screen's content, the pop-up,
/// the help overlay and the time slider. Views render it and hold nothing else.
package struct BrowserState: Sendable, Equatable {
    package enum Screen: Sendable, Equatable { case sources, list, detail }

    /// A source on the sources screen.
    package struct SourceRow: Sendable, Equatable {
        package var source: SourceViewData
        package var items: Int
        /// "fetched 2026-11-22 10:04:05Z", "failed …", "never fetched".
        package var lastFetch: String
        package var failed: Bool
        /// Days or hours since the last good fetch ("3h"), "-" when never.
        package var age: String
        package init(source: SourceViewData, items: Int, lastFetch: String, failed: Bool, age: String) {
            self.source = source; self.items = items; self.lastFetch = lastFetch; self.failed = failed; self.age = age
        }
    }

    /// A list row: the row's view data and where it sits in the log.
    package struct Row: Sendable, Equatable {
        package var item: ItemRowViewData
        package var changedSeq: UInt64
        /// Read before the last reload and not since (above the screen): read again before shown.
        package var stale = false
        package init(item: ItemRowViewData, changedSeq: UInt64) { self.item = item; self.changedSeq = changedSeq }
    }

    /// A modal message: what failed and what to do, or a question (y/n) before a write.
    package struct Popup: Sendable, Equatable {
        package var title: String
        package var message: String
        package var hint: String
        /// A question: `y` does it, `n` or Esc does not.
        package var question: Question?
        package init(title: String, message: String, hint: String, question: Question? = nil) {
            self.title = title; self.message = message; self.hint = hint; self.question = question
        }
    }

    /// What a yes to a question does.
    package enum Question: Sendable, Equatable {
        case delete(ids: [String])
    }

    /// One event on the slider's bar.
    package struct Mark: Sendable, Equatable {
        package var seq: UInt64
        package var type: String
        package var isFailure: Bool
        package var time: String
        package init(seq: UInt64, type: String, isFailure: Bool, time: String) {
            self.seq = seq; self.type = type; self.isFailure = isFailure; self.time = time
        }
    }

    /// Text being typed into a prompt (`/` filter, `t` point, `n` a new item, `e` an edit).
    package struct Prompt: Sendable, Equatable {
        package enum Kind: Sendable, Equatable {
            case filter, point, create
            /// An edit of the item with this id, staged in the browser's session.
            case edit(id: String)
        }
        package var kind: Kind
        package var text: String
        /// `field=value` lines Tab cycles through (an edit's fields, as they are now).
        package var choices: [String]
        package var choice: Int
        package init(kind: Kind, text: String, choices: [String] = [], choice: Int = 0) {
            self.kind = kind; self.text = text; self.choices = choices; self.choice = choice
        }
    }

    /// What the source takes: creates, edits, deletes (its write URLs).
    package struct Writes: Sendable, Equatable {
        package var create = false, edit = false, delete = false
        package init(create: Bool = false, edit: Bool = false, delete: Bool = false) { self.create = create; self.edit = edit; self.delete = delete }
        package var any: Bool { create || edit || delete }
    }

    /// The browser's edit session: changes staged, not yet accepted.
    package struct Staging: Sendable, Equatable {
        package var session: String
        package var changes: Int
        package var items: Int
        /// The staged changes of the open source's items, by id (old → new from the document
        /// the first edit was staged on).
        package var byID: [String: [ChangeViewData]]
        package init(session: String, changes: Int = 0, items: Int = 0, byID: [String: [ChangeViewData]] = [:]) {
            self.session = session; self.changes = changes; self.items = items; self.byID = byID
        }
    }

    package var screen: Screen = .sources
    package var sources: [SourceRow] = []
    /// What the sources screen says while there is none: how to add one, as the front end words it.
    package var noSourcesText = "No sources yet."
    package var sourceCursor = 0
    package var source: String?
    package var sourceData: SourceViewData?
    package var columns: [String] = []
    /// The source names an image path: rows leave room for a thumbnail.
    package var hasImages = false

    package var rows: [Row] = []
    package var total = 0
    package var cursor = 0
    package var top = 0
    package var viewportRows = 10
    package var hasMore = false
    package var isLoading = false
    package var filter = FilterViewData()
    /// The filter as typed (`make=Toyota`, or text to search).
    package var filterText = ""
    package var usedIndex = false

    package var detail: ItemDetailViewData?
    package var detailID: String?
    package var isDownloading = false
    package var detailScroll = 0
    package var history: HistoryViewData?
    package var showHistory = false
    /// The selected item's changes at the slider's point (old → new), when it changed there.
    package var changesAtPoint: [ChangeViewData] = []

    package var isRefreshing = false
    package var refreshProgress: String?
    package var status: String?
    package var popup: Popup?
    package var showHelp = false
    package var prompt: Prompt?

    package var writes = Writes()
    /// Staged changes of the browser's session (none: nil).
    package var staging: Staging?
    /// Writes of the source the server has not confirmed yet (`P` pushes them).
    package var outbox = 0
    package var isPushing = false

    package var timeline: [Mark] = []
    /// The slider's point; nil is live (the head).
    package var point: UInt64?
    package var head: UInt64 = 0
    /// Events appended since the slider left live.
    package var newEvents = 0

    package init() {}

    package var isLive: Bool { point == nil }
    /// Whether work runs that a spinner should show.
    package var isBusy: Bool { isRefreshing || isDownloading || isLoading || isPushing }
    package var selectedRow: Row? { rows.indices.contains(cursor) ? rows[cursor] : nil }
    /// The slider's point as a seq (the head when live).
    package var pointSeq: UInt64 { point ?? head }
}
