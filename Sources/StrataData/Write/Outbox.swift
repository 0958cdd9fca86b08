public import EventStore

/// The `outbox` projection: every local write with where it is on its way to the server, and
/// the edit sessions. Collections (of a ``KeyedDocumentProjection``, so each has history):
///
/// - `writes`, key = the write's seq: ``OutboxWrite``'s JSON (kind, source, key, user, ops, base,
///   state, attempts, the server's last answer);
/// - `open`, the same documents while the write is open (pending, sent or conflicted), so a push
///   reads the open writes, not every write ever made;
/// - `sessions`, key = the session's name: its state and its staged edits;
/// - `ids`, key = `source/localKey`: the id the server gave an item created here.
public enum Outbox {
    public static let projection = KeyedDocumentProjection(
        name: "outbox", version: 16,
        eventTypes: WriteEvents.all.subtracting([WriteEvents.configChanged]),
        skipping: []
    ) { event, fate, ctx in
        try fold(event, fate, ctx)
    }

    static func fold(_ event: RecordedEvent, _ fate: EventFate, _ ctx: ProjectionContext) throws -> [DocumentOperation] {
        let reader = DocumentReader(transaction: ctx.transaction, tables: ctx.tables)
        let payload = try LocalWriteFold.json(event, ctx)
        switch event.type {
        case WriteEvents.created, WriteEvents.patched, WriteEvents.deleted:
            // A write of a forgotten item: its content is gone, so it is never sent (again).
            let erased = fate == .erased
            var o: [String: JSONValue] = [
                "seq": .number(String(event.seq)), "id": .string(event.id), "kind": .string(WriteKind(eventType: event.type)!.rawValue),
                "source": .string(try LocalWriteFold.required(event, "source")), "key": .string(try LocalWriteFold.required(event, "key")),
                "user": .string(event[metadata: "user"] ?? ""), "state": .string(WriteState.pending.rawValue), "attempts": .number("0")
            ]
            if let s = event[metadata: "session"] { o["session"] = .string(s) }
            if let v = event[metadata: "baseVersion"] { o["baseVersion"] = .number(v) }
            if let e = event[metadata: "baseETag"] { o["baseETag"] = .string(e) }
            for field in ["ops", "base", "document"] { if let v = payload?.value(atPath: field) { o[field] = v } }
            if erased {
                o["state"] = .string(WriteState.dropped.rawValue)
                o["erased"] = .bool(true)
                o["reason"] = .string("its item was forgotten")
                return [.put(collection: "writes", key: String(event.seq), document: .object(o))]
            }
            let doc = JSONValue.object(o)
            return [.put(collection: "writes", key: String(event.seq), document: doc), .put(collection: "open", key: String(event.seq), document: doc)]
        case WriteEvents.staged:
            let name = try LocalWriteFold.required(event, "session")
            var session: [String: JSONValue] = [:]
            if case .object(let o)? = try reader.state(collection: "sessions", key: name)?.document, o["state"] == .string("open") { session = o }
            var edits: [JSONValue] = if case .array(let a)? = session["edits"] { a } else { [] }
            var edit: [String: JSONValue] = [
                "seq": .number(String(event.seq)), "source": .string(try LocalWriteFold.required(event, "source")),
                "key": .string(try LocalWriteFold.required(event, "key")), "user": .string(event[metadata: "user"] ?? "")
            ]
            for field in ["ops", "base"] { if let v = payload?.value(atPath: field) { edit[field] = v } }
            if let e = event[metadata: "baseETag"] { edit["baseETag"] = .string(e) }
            if let v = event[metadata: "baseVersion"] { edit["baseVersion"] = .number(v) }
            edits.append(.object(edit))
            session["state"] = .string("open")
            session["edits"] = .array(edits)
            session["opened"] = session["opened"] ?? .number(String(event.seq))
            return [.put(collection: "sessions", key: name, document: .object(session))]
        case WriteEvents.sessionAccepted, WriteEvents.sessionCancelled:
            let name = try LocalWriteFold.required(event, "session")
            guard case .object(var o)? = try reader.state(collection: "sessions", key: name)?.document else { return [] }
            o["state"] = .string(event.type == WriteEvents.sessionAccepted ? "accepted" : "cancelled")
            o["closed"] = .number(String(event.seq))
            return [.put(collection: "sessions", key: name, document: .object(o))]
        default:
            break
        }
        // The delivery of a write.
        let write = try LocalWriteFold.writeSeq(event)
        guard case .object(var o)? = try reader.state(collection: "writes", key: String(write))?.document else {
            throw DocumentError("\(event.type) for write \(write), which is not a local write")
        }
        // What happened to an erased write before or after it was erased no longer matters.
        if o["erased"] == .bool(true) { return [] }
        var ops: [DocumentOperation] = []
        func set(_ state: WriteState) { o["state"] = .string(state.rawValue) }
        func number(_ key: String) -> Int { if case .number(let n)? = o[key] { Int(n) ?? 0 } else { 0 } }
        if let status = event[metadata: "status"] { o["status"] = .number(status) }
        switch event.type {
        case WriteEvents.sent:
            set(.sent)
            o["attempts"] = .number(String(number("attempts") + 1))
        case WriteEvents.acknowledged:
            set(.acknowledged)
            o["answerSeq"] = .number(String(event.seq))
            o.removeValue(forKey: "reason")
            if let e = event[metadata: "etag"] { o["etag"] = .string(e) }
            if let id = event[metadata: "serverId"] {
                o["serverId"] = .string(id)
                if case .string(let source)? = o["source"], case .string(let key)? = o["key"], id != key {
                    ops.append(.put(collection: "ids", key: "\(source)/\(key)", document: .string(id)))
                }
            }
        case WriteEvents.rejected:
            set(.rejected)
            o["answerSeq"] = .number(String(event.seq))
            o["reason"] = .string(event[metadata: "reason"] ?? "")
        case WriteEvents.conflicted:
            set(.conflicted)
            o["answerSeq"] = .number(String(event.seq))
            o["server"] = payload?.value(atPath: "server") ?? .null
            o["paths"] = payload?.value(atPath: "paths") ?? .array([])
            if let e = event[metadata: "etag"] { o["serverETag"] = .string(e) }
        case WriteEvents.rebased:
            if let e = event[metadata: "etag"] { o["baseETag"] = .string(e) }
            o["rebased"] = .number(String(number("rebased") + 1))
        case WriteEvents.failed:
            set(.pending)
            o["reason"] = .string(event[metadata: "error"] ?? "")
        case WriteEvents.retried:
            set(.pending)
            o.removeValue(forKey: "reason")
            if let force = event[metadata: "force"] { o["baseETag"] = .string(force); o["force"] = .bool(true) }
            if event[metadata: "key"] != nil, case .string(let k)? = o["key"], k != event[metadata: "key"] { o["key"] = .string(event[metadata: "key"]!) }
        case WriteEvents.dropped:
            set(.dropped)
            o["answerSeq"] = .number(String(event.seq))
        default:
            return []
        }
        o["updatedSeq"] = .number(String(event.seq))
        let doc = JSONValue.object(o)
        ops.append(.put(collection: "writes", key: String(write), document: doc))
        let state = WriteState(rawValue: { if case .string(let s)? = o["state"] { s } else { "" } }()) ?? .pending
        ops.append(state.isOpen ? .put(collection: "open", key: String(write), document: doc) : .remove(collection: "open", key: String(write)))
        return ops
    }
}

/// One local write as the outbox keeps it.
public struct OutboxWrite: Sendable, Hashable {
    public var seq: UInt64
    /// The write event's id: the `Idempotency-Key` it is sent with.
    public var id: String
    public var kind: WriteKind
    public var source: String
    /// The item's key when the write was made (a local id for an item created here).
    public var key: String
    public var user: String
    public var session: String?
    public var state: WriteState
    public var attempts: Int
    public var ops: [PatchOperation]
    /// The item's document the write was made on (patches and deletes).
    public var base: JSONValue?
    /// The created document.
    public var document: JSONValue?
    public var baseVersion: Int?
    /// The ETag of the version the write was made on, or that a rebase moved it to.
    public var baseETag: String?
    /// Send over the server's version even though it conflicts (`outbox retry` of a conflict).
    public var force: Bool
    public var status: Int?
    public var reason: String?
    public var etag: String?
    public var serverId: String?
    /// A conflict's other side: the server's document and the paths both changed.
    public var server: JSONValue?
    public var conflictPaths: [String]
    public var serverETag: String?
    public var answerSeq: UInt64?
    /// How often a push rebased it on a newer server version.
    public var rebased: Int

    init?(_ doc: JSONValue) {
        func s(_ k: String) -> String? { if case .string(let v)? = doc.value(atPath: k) { v } else { nil } }
        func n(_ k: String) -> Int? { if case .number(let v)? = doc.value(atPath: k) { Int(v) } else { nil } }
        guard let seq = n("seq"), let id = s("id"), let kind = s("kind").flatMap(WriteKind.init(rawValue:)), let source = s("source"),
            let key = s("key")
        else { return nil }
        self.seq = UInt64(seq); self.id = id; self.kind = kind; self.source = source; self.key = key
        user = s("user") ?? ""
        session = s("session")
        state = s("state").flatMap(WriteState.init(rawValue:)) ?? .pending
        attempts = n("attempts") ?? 0
        if case .array(let a)? = doc.value(atPath: "ops") { ops = a.compactMap { try? PatchOperation(json: $0) } } else { ops = [] }
        base = doc.value(atPath: "base")
        document = doc.value(atPath: "document")
        baseVersion = n("baseVersion")
        baseETag = s("baseETag")
        force = doc.value(atPath: "force") == .bool(true)
        status = n("status")
        reason = s("reason")
        etag = s("etag")
        serverId = s("serverId")
        let srv = doc.value(atPath: "server")
        server = srv == .null ? nil : srv
        if case .array(let a)? = doc.value(atPath: "paths") {
            conflictPaths = a.compactMap { if case .string(let p) = $0 { p } else { nil } }
        } else {
            conflictPaths = []
        }
        serverETag = s("serverETag")
        answerSeq = n("answerSeq").map(UInt64.init)
        rebased = n("rebased") ?? 0
    }
}

/// One staged edit of a session.
public struct StagedEdit: Sendable, Hashable {
    public var seq: UInt64
    public var source: String
    public var key: String
    public var ops: [PatchOperation]
    public var base: JSONValue?
    public var baseETag: String?
    public var baseVersion: Int?

    public init(seq: UInt64, source: String, key: String, ops: [PatchOperation], base: JSONValue?, baseETag: String? = nil, baseVersion: Int? = nil) {
        self.seq = seq; self.source = source; self.key = key; self.ops = ops; self.base = base; self.baseETag = baseETag; self.baseVersion = baseVersion
    }
}

/// An edit session: edits staged across items, accepted or cancelled as one.
public struct EditSessionEntity: Sendable, Hashable {
    public enum State: String, Sendable { case open, accepted, cancelled }
    public var name: String
    public var state: State
    public var edits: [StagedEdit]
    public var opened: UInt64?
    public var closed: UInt64?

    public init(name: String, state: State, edits: [StagedEdit], opened: UInt64? = nil, closed: UInt64? = nil) {
        self.name = name; self.state = state; self.edits = edits; self.opened = opened; self.closed = closed
    }

    init?(name: String, _ doc: JSONValue) {
        guard case .string(let st)? = doc.value(atPath: "state"), let state = State(rawValue: st) else { return nil }
        self.name = name
        self.state = state
        func n(_ v: JSONValue?) -> Int? { if case .number(let x)? = v { Int(x) } else { nil } }
        opened = n(doc.value(atPath: "opened")).map(UInt64.init)
        closed = n(doc.value(atPath: "closed")).map(UInt64.init)
        guard case .array(let a)? = doc.value(atPath: "edits") else { edits = []; return }
        edits = a.compactMap { e in
            guard let seq = n(e.value(atPath: "seq")), case .string(let source)? = e.value(atPath: "source"),
                case .string(let key)? = e.value(atPath: "key")
            else { return nil }
            var ops: [PatchOperation] = []
            if case .array(let o)? = e.value(atPath: "ops") { ops = o.compactMap { try? PatchOperation(json: $0) } }
            let etag: String? = if case .string(let t)? = e.value(atPath: "baseETag") { t } else { nil }
            return StagedEdit(
                seq: UInt64(seq), source: source, key: key, ops: ops, base: e.value(atPath: "base"), baseETag: etag,
                baseVersion: n(e.value(atPath: "baseVersion")))
        }
    }
}

/// Reads of the outbox (one read snapshot per call).
public struct OutboxTables: Sendable {
    public let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// Open writes (pending, sent, conflicted) of a source, or of every source, in the order
    /// they were made.
    public func open(source: String? = nil) async throws -> [OutboxWrite] {
        try await store.documents(projection: "outbox") { r in
            try r.states(collection: "open").compactMap { OutboxWrite($0.document) }
                .filter { source == nil || $0.source == source }.sorted { $0.seq < $1.seq }
        }
    }

    /// Every write (settled ones too): the newest `limit`, oldest first (as the open ones are
    /// listed).
    public func all(source: String? = nil, limit: Int = 200) async throws -> [OutboxWrite] {
        try await store.documents(projection: "outbox") { r in
            Array(
                try r.states(collection: "writes").compactMap { OutboxWrite($0.document) }
                    .filter { source == nil || $0.source == source }.sorted { $0.seq > $1.seq }.prefix(limit).reversed())
        }
    }

    /// One write by its seq.
    public func write(seq: UInt64) async throws -> OutboxWrite? {
        try await store.documents(projection: "outbox") { r in
            try r.state(collection: "writes", key: String(seq)).flatMap { OutboxWrite($0.document) }
        }
    }

    /// The writes of the given seqs (for history's answers), in one snapshot.
    public func writes(seqs: [UInt64]) async throws -> [UInt64: OutboxWrite] {
        try await store.documents(projection: "outbox") { r in
            var out: [UInt64: OutboxWrite] = [:]
            for s in seqs { if let w = try r.state(collection: "writes", key: String(s)).flatMap({ OutboxWrite($0.document) }) { out[s] = w } }
            return out
        }
    }

    /// The id the server gave an item created here under `key`; nil when it has none (yet).
    public func serverId(source: String, key: String) async throws -> String? {
        try await store.documents(projection: "outbox") { r in
            guard case .string(let id)? = try r.state(collection: "ids", key: "\(source)/\(key)")?.document else { return nil }
            return id
        }
    }

    public func session(_ name: String) async throws -> EditSessionEntity? {
        try await store.documents(projection: "outbox") { r in
            try r.state(collection: "sessions", key: name).flatMap { EditSessionEntity(name: name, $0.document) }
        }
    }

    public func sessions() async throws -> [EditSessionEntity] {
        try await store.documents(projection: "outbox") { r in
            try r.states(collection: "sessions").compactMap { EditSessionEntity(name: $0.key, $0.document) }
        }
    }
}
