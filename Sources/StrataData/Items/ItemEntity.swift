public import EventStore

/// A stored item row: the `items` projection's state of one key, with its detail and image rows.
public struct ItemEntity: Sendable, Hashable {
    public var source: String
    public var id: String
    public var version: Int
    public var firstSeq: UInt64
    public var changedSeq: UInt64
    /// The last event that saw the item (current reads only).
    public var lastSeenSeq: UInt64?
    public var removed: Bool
    public var document: JSONValue
    public var detail: JSONValue?
    public var image: ImageEntity?
    /// Whether the document shows local writes the server has not confirmed (then, or now).
    public var pending: PendingMark

    public init(
        source: String, id: String, version: Int, firstSeq: UInt64, changedSeq: UInt64, lastSeenSeq: UInt64? = nil,
        removed: Bool = false, document: JSONValue, detail: JSONValue? = nil, image: ImageEntity? = nil, pending: PendingMark = .none
    ) {
        self.source = source; self.id = id; self.version = version; self.firstSeq = firstSeq; self.changedSeq = changedSeq
        self.lastSeenSeq = lastSeenSeq; self.removed = removed; self.document = document; self.detail = detail; self.image = image
        self.pending = pending
    }

    init(_ s: DocumentState, detail: JSONValue?, image: ImageEntity?, pending: PendingMark = .none) {
        self.init(
            source: s.collection, id: s.key, version: s.version, firstSeq: s.firstSeq, changedSeq: s.changedSeq,
            lastSeenSeq: s.lastSeenSeq, removed: s.removed, document: s.document, detail: detail, image: image, pending: pending)
    }
}

/// A stored image row (`images` projection): where it came from and the hash of its bytes.
public struct ImageEntity: Sendable, Hashable {
    public var url: String
    public var sha256: String
    public var size: Int
    public var contentType: String

    public init(url: String, sha256: String, size: Int, contentType: String) {
        self.url = url; self.sha256 = sha256; self.size = size; self.contentType = contentType
    }

    init?(_ document: JSONValue) {
        guard case .string(let url)? = document.value(atPath: "url"), case .string(let sha)? = document.value(atPath: "sha256") else { return nil }
        let size = document.value(atPath: "size").flatMap { if case .number(let n) = $0 { Int(n) } else { nil } } ?? 0
        let type = document.value(atPath: "contentType").flatMap { if case .string(let t) = $0 { t } else { nil } } ?? ""
        self.init(url: url, sha256: sha, size: size, contentType: type)
    }
}

/// A stored version row of an item: of its list entry (`items` history) or of its detail
/// (`details` history), with the event that produced it.
public struct ItemVersionEntity: Sendable, Hashable {
    public enum Origin: String, Sendable, Hashable { case list, detail, local }

    public var version: Int
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var kind: ChangeKind
    public var changes: [PatchOperation]
    public var document: JSONValue
    /// The `run` metadata of the event at `seq`.
    public var run: String?
    public var eventType: String?
    public var origin: Origin
    /// Imported with a date of its own (`import --recorded-at`, `import --git`): observed
    /// before it reached the log.
    public var backfilled: Bool
    /// Why this version only stored values again redacted anew (``RedactionRestore``); nil for
    /// a change of the API's data.
    public var restored: String?
    /// A local version: who wrote it, and the write it belongs to as the outbox has it now.
    public var user: String?
    public var write: OutboxWrite?
    /// Whether `document` and `changes` were read. A history read for a few of its versions
    /// (``ItemTables/history(source:id:upTo:observedBy:detailing:)``) leaves the others'
    /// null and empty: only their place, number, kind and labels are known.
    public var isDetailed = true

    public init(
        version: Int, seq: UInt64, recordedAt: Timestamp, kind: ChangeKind, changes: [PatchOperation], document: JSONValue,
        run: String? = nil, eventType: String? = nil, origin: Origin = .list, backfilled: Bool = false
    ) {
        self.version = version; self.seq = seq; self.recordedAt = recordedAt; self.kind = kind; self.changes = changes
        self.document = document; self.run = run; self.eventType = eventType; self.origin = origin; self.backfilled = backfilled
    }
}

/// An item's difference between two seqs.
public struct ItemDiffEntity: Sendable, Hashable {
    public var id: String
    public var kind: ChangeKind
    public var before: JSONValue?
    public var after: JSONValue?
    public var changes: [PatchOperation]
}

/// A stored source row: its definition and its latest fetch runs, read from the log.
public struct SourceEntity: Sendable, Hashable {
    public var definition: SourceDefinition
    public var lastRun: FetchRunEntity?
    public var lastSuccess: FetchRunEntity?

    public init(definition: SourceDefinition, lastRun: FetchRunEntity? = nil, lastSuccess: FetchRunEntity? = nil) {
        self.definition = definition; self.lastRun = lastRun; self.lastSuccess = lastSuccess
    }
}

/// The end of a fetch run: a `FetchCompleted` event, or the `FetchFailed` that stopped its list.
public struct FetchRunEntity: Sendable, Hashable {
    public var run: String
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var completed: Bool
    /// Every page was seen (only then are unseen items removed).
    public var complete: Bool
    public var pages: Int
    public var error: String?
    public var failures: Int
    /// Seconds the list stays fresh after this pass, by the API's `Cache-Control: max-age`.
    public var maxAge: Int?

    public init(
        run: String, seq: UInt64, recordedAt: Timestamp, completed: Bool, complete: Bool = false, pages: Int = 0,
        error: String? = nil, failures: Int = 0, maxAge: Int? = nil
    ) {
        self.run = run; self.seq = seq; self.recordedAt = recordedAt; self.completed = completed; self.complete = complete
        self.pages = pages; self.error = error; self.failures = failures; self.maxAge = maxAge
    }
}

/// The engine's change kind under a name that does not clash with the domain's `ChangeKind`.
public typealias StoredChangeKind = ChangeKind
