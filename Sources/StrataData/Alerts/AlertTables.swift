public import EventStore
public import Foundation

/// An alert as the `alerts` projection keeps it.
public struct AlertEntity: Sendable, Hashable {
    public var source: String
    public var name: String
    /// The definition as it was added: `on`, `fields`, `when`, `webhook` or `exec`.
    public var definition: JSONValue
    public var addedSeq: UInt64
    /// The id of its `AlertAdded` event: part of every notification id, so an alert removed and
    /// added again under the same name never reuses an id.
    public var addedId: String
    public var queued: Int
    public var delivered: Int
    public var failed: Int

    init?(_ doc: JSONValue) {
        guard case .object(let o) = doc, case .string(let source)? = o["source"], case .string(let name)? = o["name"],
            case .number(let seq)? = o["addedSeq"], let addedSeq = UInt64(seq), case .string(let addedId)? = o["addedId"]
        else { return nil }
        func n(_ k: String) -> Int { if case .number(let v)? = o[k] { Int(v) ?? 0 } else { 0 } }
        self.source = source
        self.name = name
        self.addedSeq = addedSeq
        self.addedId = addedId
        queued = n("queued")
        delivered = n("delivered")
        failed = n("failed")
        definition = .object(o.filter { ["on", "fields", "when", "webhook", "exec"].contains($0.key) })
    }
}

/// A notification as the `alerts` projection keeps it.
public struct NotificationEntity: Sendable, Hashable {
    public var id: String
    /// `SOURCE/NAME`.
    public var alert: String
    public var source: String
    public var item: String
    public var kind: String
    /// The seq of its `NotificationQueued` event (its payload is the body to deliver).
    public var seq: UInt64
    public var pass: UInt64
    public var state: NotificationEntityState
    public var attempts: Int
    public var lastAttemptAt: Date?
    public var error: String?
    public var status: Int?

    init?(_ doc: JSONValue) {
        guard case .object(let o) = doc else { return nil }
        func s(_ k: String) -> String? { if case .string(let v)? = o[k] { v } else { nil } }
        func n(_ k: String) -> Int64? { if case .number(let v)? = o[k] { Int64(v) } else { nil } }
        guard let id = s("id"), let alert = s("alert"), let source = s("source"), let item = s("item"), let kind = s("kind"),
            let seq = n("seq")
        else { return nil }
        self.id = id
        self.alert = alert
        self.source = source
        self.item = item
        self.kind = kind
        self.seq = UInt64(seq)
        pass = UInt64(n("pass") ?? 0)
        state = s("state").flatMap(NotificationEntityState.init(rawValue:)) ?? .pending
        attempts = Int(n("attempts") ?? 0)
        lastAttemptAt = n("lastAttemptAt").map { Date(timeIntervalSince1970: Double($0) / 1000) }
        error = s("error")
        status = n("status").map { Int($0) }
    }
}

/// A notification to append: which alert, item and change, and its body.
public struct QueuedNotification: Sendable {
    public var id: String
    /// `SOURCE/NAME`.
    public var alert: String
    public var item: String
    public var kind: String
    public var pass: UInt64
    public var body: JSONValue

    public init(id: String, alert: String, item: String, kind: String, pass: UInt64, body: JSONValue) {
        self.id = id; self.alert = alert; self.item = item; self.kind = kind; self.pass = pass; self.body = body
    }
}

/// Reads of the `alerts` projection and appends of alert events (one transaction per call).
public struct AlertTables: Sendable {
    public let store: EventStore

    public init(store: EventStore) { self.store = store }

    public static func key(source: String, name: String) -> String { source + "/" + name }

    public func alerts() async throws -> [AlertEntity] {
        try await store.documents(projection: "alerts") { r in try r.states(collection: "alerts").compactMap { AlertEntity($0.document) } }
    }

    public func alert(source: String, name: String) async throws -> AlertEntity? {
        try await store.documents(projection: "alerts") { r in
            try r.state(collection: "alerts", key: Self.key(source: source, name: name)).flatMap { $0.removed ? nil : AlertEntity($0.document) }
        }
    }

    /// The last pass of `source` whose changes were matched against the alerts (0: none yet).
    public func evaluatedThrough(source: String) async throws -> UInt64 {
        try await store.documents(projection: "alerts") { r in
            guard case .number(let n)? = try r.state(collection: "evaluated", key: source)?.document.value(atPath: "through") else { return 0 }
            return UInt64(n) ?? 0
        }
    }

    /// Every pending notification, per alert in the order queued.
    public func pending() async throws -> [NotificationEntity] {
        try await store.documents(projection: "alerts") { r in
            try r.states(collection: "pending").compactMap { NotificationEntity($0.document) }.sorted { $0.seq < $1.seq }
        }
    }

    /// The body to deliver: the payload of its `NotificationQueued` event, at `seq`.
    public func body(queuedAt seq: UInt64) async throws -> [UInt8]? {
        guard let event = try await store.event(seq: seq) else { return nil }
        return try await store.payload(of: event)
    }

    /// The bodies of an alert's notifications, newest first, at most `limit`.
    public func notificationBodies(alert: String, limit: Int) async throws -> [(seq: UInt64, body: [UInt8])] {
        let events = try await store.events(EventQuery(stream: AlertEvents.stream(alert: alert), type: AlertEvents.queued, limit: limit, descending: true))
        var out: [(UInt64, [UInt8])] = []
        for e in events { if let body = try await store.payload(of: e) { out.append((e.seq, body)) } }
        return out
    }

    public func add(source: String, name: String, definition: JSONValue) async throws {
        _ = try await store.append(
            NewEvent(
                type: AlertEvents.added, stream: AlertEvents.stream,
                metadata: [("source", source), ("alert", Self.key(source: source, name: name)), ("name", name)], payload: definition.canonicalBytes))
    }

    public func remove(source: String, name: String) async throws {
        _ = try await store.append(
            NewEvent(type: AlertEvents.removed, stream: AlertEvents.stream, metadata: [("source", source), ("alert", Self.key(source: source, name: name))]))
    }

    /// Appends `notifications` and the evaluation mark of `source` through `pass` in one
    /// transaction. Ids already in the log (the same change matched again after a crash between
    /// a pass and its evaluation) are not appended again. Returns how many were new.
    @discardableResult
    public func queue(_ notifications: [QueuedNotification], source: String, through pass: UInt64, passID: String) async throws -> Int {
        var batch = notifications.map { n in
            NewEvent(
                id: n.id, type: AlertEvents.queued, stream: AlertEvents.stream(alert: n.alert),
                metadata: [
                    ("source", source), ("alert", n.alert), ("item", n.item), ("kind", n.kind),
                    ("pass", String(n.pass))
                ], payload: n.body.canonicalBytes)
        }
        batch.append(
            NewEvent(
                id: "alerts-evaluated:" + passID, type: AlertEvents.evaluated, stream: AlertEvents.stream,
                metadata: [("source", source), ("through", String(pass)), ("queued", String(notifications.count))]))
        return try await store.append(batch).dropLast().count { $0.appended }
    }

    public enum Attempt: Sendable {
        case sent
        case delivered(status: Int?)
        case failed(error: String, status: Int?, willRetry: Bool)
    }

    /// Records one step of a delivery attempt.
    public func record(_ attempt: Attempt, notification id: String, alert: String, number: Int) async throws {
        var meta: [(key: String, value: String)] = [("notification", id), ("alert", alert), ("attempt", String(number))]
        let type: String
        switch attempt {
        case .sent:
            type = AlertEvents.sent
        case .delivered(let status):
            type = AlertEvents.delivered
            if let status { meta.append(("status", String(status))) }
        case .failed(let error, let status, let willRetry):
            type = AlertEvents.failed
            meta.append(("error", String(error.prefix(2_000))))
            if let status { meta.append(("status", String(status))) }
            meta.append(("willRetry", willRetry ? "true" : "false"))
        }
        _ = try await store.append(NewEvent(type: type, stream: AlertEvents.stream, metadata: meta))
    }
}
