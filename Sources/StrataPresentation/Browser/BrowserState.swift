import StrataDomain

/// Everything the browser shows, as plain values: the screen, each screen's content, the pop-up,
/// the help overlay and the time slider. Views render it and hold nothing else.
public struct BrowserState: Sendable, Equatable {
    public enum Screen: Sendable, Equatable { case sources, list, detail }

    /// A source on the sources screen.
    public struct SourceRow: Sendable, Equatable {
        public var source: SourceViewData
        public var items: Int
        /// "fetched 2026-11-22 10:04:05Z", "failed …", "never fetched".
        public var lastFetch: String
        public var failed: Bool
        /// Days or hours since the last good fetch ("3h"), "-" when never.
        public var age: String
        public init(source: SourceViewData, items: Int, lastFetch: String, failed: Bool, age: String) {
            self.source = source; self.items = items; self.lastFetch = lastFetch; self.failed = failed; self.age = age
        }
    }

    /// A list row: the row's view data and where it sits in the log.
    public struct Row: Sendable, Equatable {
        public var item: ItemRowViewData
        public var changedSeq: UInt64
        /// Read before the last reload and not since (above the screen): read again before shown.
        public var stale = false
        public init(item: ItemRowViewData, changedSeq: UInt64) { self.item = item; self.changedSeq = changedSeq }
    }

    /// A modal message: what failed and what to do, or a question (y/n) before a write.
    public struct Popup: Sendable, Equatable {
        public var title: String
        public var message: String
        public var hint: String
        /// A question: `y` does it, `n` or Esc does not.
        public var question: Question?
        public init(title: String, message: String, hint: String, question: Question? = nil) {
            self.title = title; self.message = message; self.hint = hint; self.question = question
        }
    }

    /// What a yes to a question does.
    public enum Question: Sendable, Equatable {
        case delete(ids: [String])
    }

    /// One event on the slider's bar.
    public struct Mark: Sendable, Equatable {
        public var seq: UInt64
        public var type: String
        public var isFailure: Bool
        public var time: String
        public init(seq: UInt64, type: String, isFailure: Bool, time: String) { self.seq = seq; self.type = type; self.isFailure = isFailure; self.time = time }
    }

    /// Text being typed into a prompt (`/` filter, `t` point, `n` a new item, `e` an edit).
    public struct Prompt: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case filter, point, create
            /// An edit of the item with this id, staged in the browser's session.
            case edit(id: String)
        }
        public var kind: Kind
        public var text: String
        /// `field=value` lines Tab cycles through (an edit's fields, as they are now).
        public var choices: [String]
        public var choice: Int
        public init(kind: Kind, text: String, choices: [String] = [], choice: Int = 0) {
            self.kind = kind; self.text = text; self.choices = choices; self.choice = choice
        }
    }

    /// What the source takes: creates, edits, deletes (its write URLs).
    public struct Writes: Sendable, Equatable {
        public var create = false, edit = false, delete = false
        public init(create: Bool = false, edit: Bool = false, delete: Bool = false) { self.create = create; self.edit = edit; self.delete = delete }
        public var any: Bool { create || edit || delete }
    }

    /// The browser's edit session: changes staged, not yet accepted.
    public struct Staging: Sendable, Equatable {
        public var session: String
        public var changes: Int
        public var items: Int
        /// The staged changes of the open source's items, by id (old → new from the document
        /// the first edit was staged on).
        public var byID: [String: [ChangeViewData]]
        public init(session: String, changes: Int = 0, items: Int = 0, byID: [String: [ChangeViewData]] = [:]) {
            self.session = session; self.changes = changes; self.items = items; self.byID = byID
        }
    }

    public var screen: Screen = .sources
    public var sources: [SourceRow] = []
    public var sourceCursor = 0
    public var source: String?
    public var sourceData: SourceViewData?
    public var columns: [String] = []
    /// The source names an image path: rows leave room for a thumbnail.
    public var hasImages = false

    public var rows: [Row] = []
    public var total = 0
    public var cursor = 0
    public var top = 0
    public var viewportRows = 10
    public var hasMore = false
    public var isLoading = false
    public var filter = FilterViewData()
    /// The filter as typed (`make=Toyota`, or text to search).
    public var filterText = ""
    public var usedIndex = false

    public var detail: ItemDetailViewData?
    public var detailID: String?
    public var isDownloading = false
    public var detailScroll = 0
    public var history: HistoryViewData?
    public var showHistory = false
    /// The selected item's changes at the slider's point (old → new), when it changed there.
    public var changesAtPoint: [ChangeViewData] = []

    public var isRefreshing = false
    public var refreshProgress: String?
    public var status: String?
    public var popup: Popup?
    public var showHelp = false
    public var prompt: Prompt?

    public var writes = Writes()
    /// Staged changes of the browser's session (none: nil).
    public var staging: Staging?
    /// Writes of the source the server has not confirmed yet (`P` pushes them).
    public var outbox = 0
    public var isPushing = false

    public var timeline: [Mark] = []
    /// The slider's point; nil is live (the head).
    public var point: UInt64?
    public var head: UInt64 = 0
    /// Events appended since the slider left live.
    public var newEvents = 0

    public init() {}

    public var isLive: Bool { point == nil }
    /// Whether work runs that a spinner should show.
    public var isBusy: Bool { isRefreshing || isDownloading || isLoading || isPushing }
    public var selectedRow: Row? { rows.indices.contains(cursor) ? rows[cursor] : nil }
    /// The slider's point as a seq (the head when live).
    public var pointSeq: UInt64 { point ?? head }
}
