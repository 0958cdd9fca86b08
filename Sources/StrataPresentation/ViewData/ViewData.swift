package import StrataDomain

/// A source and how fresh its data is, for the staleness line under every read.
package struct SourceViewData: Sendable, Hashable {
    package enum Freshness: Sendable, Hashable {
        case never
        case fetched(at: String, seq: UInt64)
        /// The latest fetch failed; `lastGood` is when data was last stored, if ever.
        case failed(at: String, error: String, lastGood: String?)
    }
    package var name: String
    package var url: String
    package var freshness: Freshness
    package var indexedFields: [String]

    package init(name: String, url: String, freshness: Freshness, indexedFields: [String] = []) {
        self.name = name; self.url = url; self.freshness = freshness; self.indexedFields = indexedFields
    }
}

/// One row of an item list.
package struct ItemRowViewData: Sendable, Hashable {
    package var id: String
    package var title: String
    package var subtitle: String
    /// Values of the list's field columns, in column order.
    package var fields: [String]
    /// The image's URL (or "-"), shown where no thumbnail is drawn.
    package var picture: String
    /// The thumbnail's rows (ANSI text, each the same visible width), when drawn.
    package var thumbnail: [String]?
    package var isRemoved: Bool
    /// "pending" or "conflict" while local writes on the item are unconfirmed; nil otherwise.
    package var pending: String?

    package init(
        id: String, title: String, subtitle: String = "", fields: [String] = [], picture: String = "-",
        thumbnail: [String]? = nil, isRemoved: Bool = false, pending: String? = nil
    ) {
        self.id = id; self.title = title; self.subtitle = subtitle; self.fields = fields; self.picture = picture
        self.thumbnail = thumbnail; self.isRemoved = isRemoved; self.pending = pending
    }
}

/// A page of an item list with its columns and context.
package struct ItemListViewData: Sendable, Hashable {
    package var source: SourceViewData
    /// Headers of the field columns (the source's indexed paths).
    package var columns: [String]
    package var rows: [ItemRowViewData]
    package var total: Int
    package var offset: Int
    /// "seq 12", when read as of a point.
    package var asOf: String?
    package var usedIndex: Bool

    package init(
        source: SourceViewData, columns: [String], rows: [ItemRowViewData], total: Int, offset: Int = 0,
        asOf: String? = nil, usedIndex: Bool = false
    ) {
        self.source = source; self.columns = columns; self.rows = rows; self.total = total; self.offset = offset
        self.asOf = asOf; self.usedIndex = usedIndex
    }
}

/// One item in full.
package struct ItemDetailViewData: Sendable, Hashable {
    package var source: SourceViewData
    package var id: String
    package var title: String
    package var subtitle: String
    /// "v3 · first seen seq 4 · changed seq 20".
    package var status: String
    /// Every scalar of the detail (or the list entry) as a dotted path and its text.
    package var fields: [LabeledValue]
    package var picture: String
    package var thumbnail: [String]?
    package var isRemoved: Bool
    package var asOf: String?
    /// Why the detail could not be downloaded, when it could not (the stored one is shown).
    package var refreshError: String?

    package init(
        source: SourceViewData, id: String, title: String, subtitle: String = "", status: String, fields: [LabeledValue],
        picture: String = "-", thumbnail: [String]? = nil, isRemoved: Bool = false, asOf: String? = nil, refreshError: String? = nil
    ) {
        self.source = source; self.id = id; self.title = title; self.subtitle = subtitle; self.status = status; self.fields = fields
        self.picture = picture; self.thumbnail = thumbnail; self.isRemoved = isRemoved; self.asOf = asOf; self.refreshError = refreshError
    }
}

/// A label and its value.
package struct LabeledValue: Sendable, Hashable {
    package var label: String
    package var value: String
    package init(_ label: String, _ value: String) { self.label = label; self.value = value }
}

/// One field change: `~ /price: 1000 → 900`.
package struct ChangeViewData: Sendable, Hashable {
    package enum Mark: String, Sendable, Hashable { case added = "+", removed = "-", replaced = "~" }
    package var mark: Mark
    package var path: String
    package var old: String?
    package var new: String?

    package init(mark: Mark, path: String, old: String? = nil, new: String? = nil) {
        self.mark = mark; self.path = path; self.old = old; self.new = new
    }

    /// `~ /price: 1000 → 900`, `+ /km: 5`, `- /tags: [...]`.
    package var text: String {
        switch mark {
        case .added: "+ \(path): \(new ?? "")"
        case .removed: "- \(path): \(old ?? "")"
        case .replaced: "~ \(path): \(old ?? "") → \(new ?? "")"
        }
    }
}

/// One version in an item's history.
package struct VersionViewData: Sendable, Hashable {
    package var version: Int
    package var seq: UInt64
    package var time: String
    package var kind: String
    /// The first 8 characters of the fetch run's id, or "-".
    package var run: String
    package var changes: [ChangeViewData]
    /// `list` (the item's entry in the list) or `detail`.
    package var origin: String
    /// Imported with its own date: observed at `time`, stored later.
    package var backfilled: Bool
    /// A local version: "by alice · acknowledged 200" (who wrote it and the server's answer).
    package var local: String?
    /// Values stored again redacted anew: "with description redacted" (no change of the data).
    package var restored: String?

    package init(
        version: Int, seq: UInt64, time: String, kind: String, run: String, changes: [ChangeViewData], origin: String = "list",
        backfilled: Bool = false, local: String? = nil, restored: String? = nil
    ) {
        self.version = version; self.seq = seq; self.time = time; self.kind = kind; self.run = run; self.changes = changes
        self.origin = origin; self.backfilled = backfilled; self.local = local; self.restored = restored
    }
}

/// An item's history.
package struct HistoryViewData: Sendable, Hashable {
    package var source: SourceViewData
    package var id: String
    package var title: String
    package var versions: [VersionViewData]

    package init(source: SourceViewData, id: String, title: String, versions: [VersionViewData]) {
        self.source = source; self.id = id; self.title = title; self.versions = versions
    }
}

/// One item's line in a diff.
package struct DiffItemViewData: Sendable, Hashable {
    /// `+` added, `-` removed, `~` changed, `↺` back again.
    package var mark: String
    package var id: String
    package var title: String
    package var changes: [ChangeViewData]

    package init(mark: String, id: String, title: String, changes: [ChangeViewData]) {
        self.mark = mark; self.id = id; self.title = title; self.changes = changes
    }
}

/// What changed in a source between two points.
package struct DiffViewData: Sendable, Hashable {
    package var source: SourceViewData
    package var from: UInt64
    package var to: UInt64
    /// "2 added, 1 removed, 3 changed, 0 reappeared".
    package var summary: String
    package var items: [DiffItemViewData]

    package init(source: SourceViewData, from: UInt64, to: UInt64, summary: String, items: [DiffItemViewData]) {
        self.source = source; self.from = from; self.to = to; self.summary = summary; self.items = items
    }
}

/// One event of the log for people.
package struct EventViewData: Sendable, Hashable {
    package var seq: UInt64
    package var time: String
    package var type: String
    package var stream: String
    /// The metadata that tells the story (`page=2 status=200 url=…`).
    package var summary: String
    package var size: String
    package var hash: String
    package var isFailure: Bool

    package init(seq: UInt64, time: String, type: String, stream: String, summary: String, size: String, hash: String, isFailure: Bool) {
        self.seq = seq; self.time = time; self.type = type; self.stream = stream; self.summary = summary; self.size = size
        self.hash = hash; self.isFailure = isFailure
    }
}

/// What the user typed to narrow a list: the text form of an ``ItemQuery``.
package struct FilterViewData: Sendable, Hashable {
    /// `PATH=VALUE` each.
    package var wheres: [String]
    package var search: String?
    /// A path, `-` in front for descending.
    package var sort: String?
    package var limit: Int?
    package var offset: Int
    /// A seq or an ISO 8601 date/time.
    package var asOf: String?

    package init(wheres: [String] = [], search: String? = nil, sort: String? = nil, limit: Int? = nil, offset: Int = 0, asOf: String? = nil) {
        self.wheres = wheres; self.search = search; self.sort = sort; self.limit = limit; self.offset = offset; self.asOf = asOf
    }
}

/// An error as the user should read it, with what kind it is (for exit codes).
package struct PresentableError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        case notFound, invalidInput, network, storage
        /// Another party holds what this needs (a source leased to another node).
        case conflict
    }
    package var kind: Kind
    /// What went wrong, in the Domain's terms (fields by the definition's keys).
    package var message: String
    /// The way out, typed: each front end words it (``FrontEndWording``).
    package var next: NextStep?
    /// A source spec's problem, whose fields each front end names.
    package var spec: SpecProblem?
    package init(kind: Kind, message: String, next: NextStep? = nil) { self.kind = kind; self.message = message; self.next = next }
    package var description: String { message }
}
