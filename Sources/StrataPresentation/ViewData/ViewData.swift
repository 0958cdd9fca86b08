/// A source and how fresh its data is, for the staleness line under every read.
public struct SourceViewData: Sendable, Hashable {
    public enum Freshness: Sendable, Hashable {
        case never
        case fetched(at: String, seq: UInt64)
        /// The latest fetch failed; `lastGood` is when data was last stored, if ever.
        case failed(at: String, error: String, lastGood: String?)
    }
    public var name: String
    public var url: String
    public var freshness: Freshness
    public var indexedFields: [String]

    public init(name: String, url: String, freshness: Freshness, indexedFields: [String] = []) {
        self.name = name; self.url = url; self.freshness = freshness; self.indexedFields = indexedFields
    }
}

/// One row of an item list.
public struct ItemRowViewData: Sendable, Hashable {
    public var id: String
    public var title: String
    public var subtitle: String
    /// Values of the list's field columns, in column order.
    public var fields: [String]
    /// The image's URL (or "-"), shown where no thumbnail is drawn.
    public var picture: String
    /// The thumbnail's rows (ANSI text, each the same visible width), when drawn.
    public var thumbnail: [String]?
    public var isRemoved: Bool
    /// "pending" or "conflict" while local writes on the item are unconfirmed; nil otherwise.
    public var pending: String?

    public init(
        id: String, title: String, subtitle: String = "", fields: [String] = [], picture: String = "-",
        thumbnail: [String]? = nil, isRemoved: Bool = false, pending: String? = nil
    ) {
        self.id = id; self.title = title; self.subtitle = subtitle; self.fields = fields; self.picture = picture
        self.thumbnail = thumbnail; self.isRemoved = isRemoved; self.pending = pending
    }
}

/// A page of an item list with its columns and context.
public struct ItemListViewData: Sendable, Hashable {
    public var source: SourceViewData
    /// Headers of the field columns (the source's indexed paths).
    public var columns: [String]
    public var rows: [ItemRowViewData]
    public var total: Int
    public var offset: Int
    /// "seq 12", when read as of a point.
    public var asOf: String?
    public var usedIndex: Bool

    public init(
        source: SourceViewData, columns: [String], rows: [ItemRowViewData], total: Int, offset: Int = 0,
        asOf: String? = nil, usedIndex: Bool = false
    ) {
        self.source = source; self.columns = columns; self.rows = rows; self.total = total; self.offset = offset
        self.asOf = asOf; self.usedIndex = usedIndex
    }
}

/// One item in full.
public struct ItemDetailViewData: Sendable, Hashable {
    public var source: SourceViewData
    public var id: String
    public var title: String
    public var subtitle: String
    /// "v3 · first seen seq 4 · changed seq 20".
    public var status: String
    /// Every scalar of the detail (or the list entry) as a dotted path and its text.
    public var fields: [LabeledValue]
    public var picture: String
    public var thumbnail: [String]?
    public var isRemoved: Bool
    public var asOf: String?
    /// Why the detail could not be downloaded, when it could not (the stored one is shown).
    public var refreshError: String?

    public init(
        source: SourceViewData, id: String, title: String, subtitle: String = "", status: String, fields: [LabeledValue],
        picture: String = "-", thumbnail: [String]? = nil, isRemoved: Bool = false, asOf: String? = nil, refreshError: String? = nil
    ) {
        self.source = source; self.id = id; self.title = title; self.subtitle = subtitle; self.status = status; self.fields = fields
        self.picture = picture; self.thumbnail = thumbnail; self.isRemoved = isRemoved; self.asOf = asOf; self.refreshError = refreshError
    }
}

/// A label and its value.
public struct LabeledValue: Sendable, Hashable {
    public var label: String
    public var value: String
    public init(_ label: String, _ value: String) { self.label = label; self.value = value }
}

/// One field change: `~ /price: 1000 → 900`.
public struct ChangeViewData: Sendable, Hashable {
    public enum Mark: String, Sendable, Hashable { case added = "+", removed = "-", replaced = "~" }
    public var mark: Mark
    public var path: String
    public var old: String?
    public var new: String?

    public init(mark: Mark, path: String, old: String? = nil, new: String? = nil) {
        self.mark = mark; self.path = path; self.old = old; self.new = new
    }

    /// `~ /price: 1000 → 900`, `+ /km: 5`, `- /tags: [...]`.
    public var text: String {
        switch mark {
        case .added: "+ \(path): \(new ?? "")"
        case .removed: "- \(path): \(old ?? "")"
        case .replaced: "~ \(path): \(old ?? "") → \(new ?? "")"
        }
    }
}

/// One version in an item's history.
public struct VersionViewData: Sendable, Hashable {
    public var version: Int
    public var seq: UInt64
    public var time: String
    public var kind: String
    /// The first 8 characters of the fetch run's id, or "-".
    public var run: String
    public var changes: [ChangeViewData]
    /// `list` (the item's entry in the list) or `detail`.
    public var origin: String
    /// Imported with its own date: observed at `time`, stored later.
    public var backfilled: Bool
    /// A local version: "by alice · acknowledged 200" (who wrote it and the server's answer).
    public var local: String?

    public init(
        version: Int, seq: UInt64, time: String, kind: String, run: String, changes: [ChangeViewData], origin: String = "list",
        backfilled: Bool = false, local: String? = nil
    ) {
        self.version = version; self.seq = seq; self.time = time; self.kind = kind; self.run = run; self.changes = changes
        self.origin = origin; self.backfilled = backfilled; self.local = local
    }
}

/// An item's history.
public struct HistoryViewData: Sendable, Hashable {
    public var source: SourceViewData
    public var id: String
    public var title: String
    public var versions: [VersionViewData]

    public init(source: SourceViewData, id: String, title: String, versions: [VersionViewData]) {
        self.source = source; self.id = id; self.title = title; self.versions = versions
    }
}

/// One item's line in a diff.
public struct DiffItemViewData: Sendable, Hashable {
    /// `+` added, `-` removed, `~` changed, `↺` back again.
    public var mark: String
    public var id: String
    public var title: String
    public var changes: [ChangeViewData]

    public init(mark: String, id: String, title: String, changes: [ChangeViewData]) {
        self.mark = mark; self.id = id; self.title = title; self.changes = changes
    }
}

/// What changed in a source between two points.
public struct DiffViewData: Sendable, Hashable {
    public var source: SourceViewData
    public var from: UInt64
    public var to: UInt64
    /// "2 added, 1 removed, 3 changed, 0 reappeared".
    public var summary: String
    public var items: [DiffItemViewData]

    public init(source: SourceViewData, from: UInt64, to: UInt64, summary: String, items: [DiffItemViewData]) {
        self.source = source; self.from = from; self.to = to; self.summary = summary; self.items = items
    }
}

/// One event of the log for people.
public struct EventViewData: Sendable, Hashable {
    public var seq: UInt64
    public var time: String
    public var type: String
    public var stream: String
    /// The metadata that tells the story (`page=2 status=200 url=…`).
    public var summary: String
    public var size: String
    public var hash: String
    public var isFailure: Bool

    public init(seq: UInt64, time: String, type: String, stream: String, summary: String, size: String, hash: String, isFailure: Bool) {
        self.seq = seq; self.time = time; self.type = type; self.stream = stream; self.summary = summary; self.size = size
        self.hash = hash; self.isFailure = isFailure
    }
}

/// What the user typed to narrow a list: the text form of an ``ItemQuery``.
public struct FilterViewData: Sendable, Hashable {
    /// `PATH=VALUE` each.
    public var wheres: [String]
    public var search: String?
    /// A path, `-` in front for descending.
    public var sort: String?
    public var limit: Int?
    public var offset: Int
    /// A seq or an ISO 8601 date/time.
    public var asOf: String?

    public init(wheres: [String] = [], search: String? = nil, sort: String? = nil, limit: Int? = nil, offset: Int = 0, asOf: String? = nil) {
        self.wheres = wheres; self.search = search; self.sort = sort; self.limit = limit; self.offset = offset; self.asOf = asOf
    }
}

/// An error as the user should read it, with what kind it is (for exit codes).
public struct PresentableError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case notFound, invalidInput, network, storage
        /// Another party holds what this needs (a source leased to another node).
        case conflict
    }
    public var kind: Kind
    public var message: String
    public init(kind: Kind, message: String) { self.kind = kind; self.message = message }
    public var description: String { message }
}
