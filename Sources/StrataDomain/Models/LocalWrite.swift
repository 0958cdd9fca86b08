package import StrataJSON

/// A write made here (create, patch or delete of one item) and where it is on its way to the
/// server.
package struct LocalWrite: Sendable, Hashable, Identifiable {
    package enum Kind: String, Sendable, Hashable, Codable { case create, patch, delete }
    package enum State: String, Sendable, Hashable, Codable, CaseIterable {
        case pending, sent, acknowledged, rejected, conflicted, dropped
        /// Still in the outbox (to send, or to decide after a conflict).
        package var isOpen: Bool { self == .pending || self == .sent || self == .conflicted }
    }

    /// The write's seq in the log: how commands name it (`outbox retry 42`).
    package var seq: UInt64
    /// The write event's id, sent as the `Idempotency-Key`.
    package var id: String
    package var kind: Kind
    package var source: String
    /// The item's id when written (a `local-…` id for an item created here).
    package var itemID: String
    /// The id the server gave an item created here.
    package var serverID: String?
    package var user: String
    package var session: String?
    package var state: State
    package var attempts: Int
    package var changes: [Change]
    /// The created document.
    package var document: JSONValue?
    /// The document the write was made on.
    package var base: JSONValue?
    /// The server's last answer: HTTP status and why (for rejections and failures).
    package var status: Int?
    package var reason: String?
    /// A conflict's other side: the server's document and the fields both sides changed.
    package var serverDocument: JSONValue?
    package var conflictPaths: [String]
    package var rebased: Int

    package init(
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
    package var localDocument: JSONValue? {
        if kind == .create { return document }
        return try? (base ?? .object([:])).applying(changes.map(PatchOperation.init(_:)))
    }

    /// One line on the server's answer: "acknowledged 200", "conflicted 412: /content", "pending".
    package var answer: String {
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

/// The base of a write: the item's document as the user saw it, its version and the ETag of the
/// server's version under it, if known.
package struct WriteBase: Sendable, Hashable {
    package var document: JSONValue
    package var version: Int
    package var etag: String?

    package init(document: JSONValue, version: Int, etag: String?) {
        self.document = document; self.version = version; self.etag = etag
    }
}

/// A session as recorded: its state and each staged edit, in the order they were staged.
package struct SessionRecord: Sendable, Hashable {
    package var name: String
    package var state: EditSession.State
    package var edits: [SessionEdit]

    package init(name: String, state: EditSession.State, edits: [SessionEdit]) { self.name = name; self.state = state; self.edits = edits }
}

/// One staged edit of a session: its operations and the base it was staged on.
package struct SessionEdit: Sendable, Hashable {
    package var seq: UInt64
    package var source: String
    package var itemID: String
    package var ops: [PatchOperation]
    package var base: JSONValue?
    package var baseETag: String?
    package var baseVersion: Int?

    package init(seq: UInt64, source: String, itemID: String, ops: [PatchOperation], base: JSONValue?, baseETag: String? = nil, baseVersion: Int? = nil) {
        self.seq = seq; self.source = source; self.itemID = itemID; self.ops = ops; self.base = base; self.baseETag = baseETag; self.baseVersion = baseVersion
    }
}

/// Edits staged across items, accepted (one batch of patches) or cancelled as one.
package struct EditSession: Sendable, Hashable {
    package enum State: String, Sendable, Hashable { case open, accepted, cancelled }
    package var name: String
    package var state: State
    /// The combined patch per item: every staged edit of an item, as one list of changes from
    /// the document it was staged on.
    package var items: [StagedItem]

    package init(name: String, state: State, items: [StagedItem]) { self.name = name; self.state = state; self.items = items }
}

/// One item's staged changes in a session.
package struct StagedItem: Sendable, Hashable {
    package var source: String
    package var itemID: String
    package var changes: [Change]
    /// The document the first edit was staged on, and the one all the edits make of it.
    package var base: JSONValue
    package var result: JSONValue
    package var edits: Int

    package init(source: String, itemID: String, changes: [Change], base: JSONValue, result: JSONValue, edits: Int) {
        self.source = source; self.itemID = itemID; self.changes = changes; self.base = base; self.result = result; self.edits = edits
    }
}

/// What a push did.
package struct PushReport: Sendable, Hashable {
    package struct Outcome: Sendable, Hashable {
        package enum Result: String, Sendable, Hashable { case acknowledged, rejected, conflicted, failed }
        package var write: UInt64
        package var kind: LocalWrite.Kind
        package var itemID: String
        package var result: Result
        package var status: Int?
        package var message: String
        package var rebased: Int
        package init(write: UInt64, kind: LocalWrite.Kind, itemID: String, result: Result, status: Int?, message: String, rebased: Int) {
            self.write = write; self.kind = kind; self.itemID = itemID; self.result = result; self.status = status; self.message = message;
            self.rebased = rebased
        }
    }
    package var source: String
    package var outcomes: [Outcome]
    /// Why the server could not be reached, when it could not: the rest stays pending.
    package var offline: String?
    /// Open writes left in the outbox.
    package var left: Int
    package var seconds: Double

    package init(source: String, outcomes: [Outcome], offline: String?, left: Int, seconds: Double) {
        self.source = source; self.outcomes = outcomes; self.offline = offline; self.left = left; self.seconds = seconds
    }

    package func count(_ r: Outcome.Result) -> Int { outcomes.count { $0.result == r } }
}
