public import StrataJSON

/// A write made here (create, patch or delete of one item) and where it is on its way to the
/// server.
public struct LocalWrite: Sendable, Hashable, Identifiable {
    public enum Kind: String, Sendable, Hashable, Codable { case create, patch, delete }
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        case pending, sent, acknowledged, rejected, conflicted, dropped
        /// Still in the outbox (to send, or to decide after a conflict).
        public var isOpen: Bool { self == .pending || self == .sent || self == .conflicted }
    }

    /// The write's seq in the log: how commands name it (`outbox retry 42`).
    public var seq: UInt64
    /// The write event's id, sent as the `Idempotency-Key`.
    public var id: String
    public var kind: Kind
    public var source: String
    /// The item's id when written (a `local-…` id for an item created here).
    public var itemID: String
    /// The id the server gave an item created here.
    public var serverID: String?
    public var user: String
    public var session: String?
    public var state: State
    public var attempts: Int
    public var changes: [Change]
    /// The created document.
    public var document: JSONValue?
    /// The document the write was made on.
    public var base: JSONValue?
    /// The server's last answer: HTTP status and why (for rejections and failures).
    public var status: Int?
    public var reason: String?
    /// A conflict's other side: the server's document and the fields both sides changed.
    public var serverDocument: JSONValue?
    public var conflictPaths: [String]
    public var rebased: Int

    public init(
        seq: UInt64, id: String, kind: Kind, source: String, itemID: String, serverID: String? = nil, user: String, session: String? = nil,
        state: State, attempts: Int = 0, changes: [Change] = [], document: JSONValue? = nil, base: JSONValue? = nil,
        status: Int? = nil, reason: String? = nil, serverDocument: JSONValue? = nil, conflictPaths: [String] = [], rebased: Int = 0
    ) {
        self.seq = seq; self.id = id; self.kind = kind; self.source = source; self.itemID = itemID; self.serverID = serverID
        self.user = user; self.session = session; self.state = state; self.attempts = attempts; self.changes = changes
        self.document = document; self.base = base; self.status = status; self.reason = reason
        self.serverDocument = serverDocument; self.conflictPaths = conflictPaths; self.rebased = rebased
    }

    /// The item as this write makes it: the created document, or its base with its changes.
    public var localDocument: JSONValue? {
        if kind == .create { return document }
        return try? (base ?? .object([:])).applying(changes.map(PatchOperation.init(_:)))
    }

    /// One line on the server's answer: "acknowledged 200", "conflicted 412: /content", "pending".
    public var answer: String {
        var s = state.rawValue
        if let status { s += " \(status)" }
        if state == .conflicted, !conflictPaths.isEmpty {
            s += ": " + conflictPaths.map { $0.isEmpty ? "the item" : $0 }.joined(separator: ", ")
        } else if let reason, state == .rejected || state == .pending {
            s += ": " + reason
        }
        return s
    }
}

/// Edits staged across items, accepted (one batch of patches) or cancelled as one.
public struct EditSession: Sendable, Hashable {
    public enum State: String, Sendable, Hashable { case open, accepted, cancelled }
    public var name: String
    public var state: State
    /// The combined patch per item: every staged edit of an item, as one list of changes from
    /// the document it was staged on.
    public var items: [StagedItem]

    public init(name: String, state: State, items: [StagedItem]) { self.name = name; self.state = state; self.items = items }
}

/// One item's staged changes in a session.
public struct StagedItem: Sendable, Hashable {
    public var source: String
    public var itemID: String
    public var changes: [Change]
    /// The document the first edit was staged on, and the one all the edits make of it.
    public var base: JSONValue
    public var result: JSONValue
    public var edits: Int

    public init(source: String, itemID: String, changes: [Change], base: JSONValue, result: JSONValue, edits: Int) {
        self.source = source; self.itemID = itemID; self.changes = changes; self.base = base; self.result = result; self.edits = edits
    }
}

/// What a push did.
public struct PushReport: Sendable, Hashable {
    public struct Outcome: Sendable, Hashable {
        public enum Result: String, Sendable, Hashable { case acknowledged, rejected, conflicted, failed }
        public var write: UInt64
        public var kind: LocalWrite.Kind
        public var itemID: String
        public var result: Result
        public var status: Int?
        public var message: String
        public var rebased: Int
        public init(write: UInt64, kind: LocalWrite.Kind, itemID: String, result: Result, status: Int?, message: String, rebased: Int) {
            self.write = write; self.kind = kind; self.itemID = itemID; self.result = result; self.status = status; self.message = message;
            self.rebased = rebased
        }
    }
    public var source: String
    public var outcomes: [Outcome]
    /// Why the server could not be reached, when it could not: the rest stays pending.
    public var offline: String?
    /// Open writes left in the outbox.
    public var left: Int
    public var seconds: Double

    public init(source: String, outcomes: [Outcome], offline: String?, left: Int, seconds: Double) {
        self.source = source; self.outcomes = outcomes; self.offline = offline; self.left = left; self.seconds = seconds
    }

    public func count(_ r: Outcome.Result) -> Int { outcomes.count { $0.result == r } }
}
