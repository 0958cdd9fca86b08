public import EventStore
import Foundation

/// The event types of alerts and of their notifications (schema version 1): notifications on
/// the stream `alerts/SOURCE/NAME` of their alert (its feed reads that stream), the rest on
/// `alerts`. `alert` in the metadata is `SOURCE/NAME`; a notification's id is the id of its
/// `NotificationQueued` event, which is also the `Idempotency-Key` it is delivered with.
///
/// | type | metadata | payload |
/// |---|---|---|
/// | `AlertAdded` | `source`, `alert`, `name` | the definition: `{"on", "fields", "when"?, "webhook"? , "exec"?}` |
/// | `AlertRemoved` | `source`, `alert` | none |
/// | `NotificationQueued` | `source`, `alert`, `item`, `kind`, `pass` (the seq of the pass that made the change) | the notification (the webhook's JSON body) |
/// | `AlertsEvaluated` | `source`, `through` (the last pass evaluated), `queued` (appended in one batch right after its `NotificationQueued` events) | none |
/// | `NotificationSent` | `notification`, `alert`, `attempt` | none |
/// | `NotificationDelivered` | `notification`, `alert`, `attempt`, `status`? | none |
/// | `NotificationFailed` | `notification`, `alert`, `attempt`, `error`, `status`?, `willRetry` | none |
public enum AlertEvents {
    public static let stream = "alerts"
    /// The stream of an alert's notifications.
    public static func stream(alert: String) -> String { stream + "/" + alert }
    public static let added = "AlertAdded"
    public static let removed = "AlertRemoved"
    public static let queued = "NotificationQueued"
    public static let evaluated = "AlertsEvaluated"
    public static let sent = "NotificationSent"
    public static let delivered = "NotificationDelivered"
    public static let failed = "NotificationFailed"

    public static let all: Set<String> = [added, removed, queued, evaluated, sent, delivered, failed]
}

/// Where a notification is on its way to its receiver.
public enum NotificationEntityState: String, Sendable {
    /// Queued, or sent without a recorded answer (sent again, under the same id).
    case pending
    case delivered
    /// Given up: refused for good, or out of attempts.
    case failed
    /// Its alert was removed before it was delivered.
    case cancelled
    /// Its item was forgotten (`strata forget`) before it was delivered: its body is erased and
    /// it is never sent again. One delivered (or failed for good) before the forget keeps that
    /// state, with `erased` set in its row.
    case erased
}

/// The `alerts` projection. Collections (of a ``KeyedDocumentProjection``, so each has history):
///
/// - `alerts`, key `SOURCE/NAME`: the definition, the seq and event id it was added with, and
///   its queued, delivered and failed counts;
/// - `notifications`, key = the notification's id: its alert, item, kind, the seq it was queued
///   at, its state, attempts, the last attempt's time and error;
/// - `pending`, key `SOURCE/NAME/` + the queued seq (20 digits): the same documents while pending,
///   so delivery reads what is left in order, not every notification ever queued;
/// - `evaluated`, key = source: `{"through": seq}`, the last pass whose changes were matched.
public enum AlertProjection {
    public static let projection = KeyedDocumentProjection(name: "alerts", version: 12, eventTypes: AlertEvents.all, skipping: []) { event, fate, ctx in
        try fold(event, fate, ctx)
    }

    static func pendingKey(alert: String, seq: UInt64) -> String {
        let digits = String(seq)
        return alert + "/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    static func required(_ event: RecordedEvent, _ key: String) throws -> String {
        guard let v = event[metadata: key], !v.isEmpty else { throw DocumentError("\(event.type) without \(key)") }
        return v
    }

    static func fold(_ event: RecordedEvent, _ fate: EventFate, _ ctx: ProjectionContext) throws -> [DocumentOperation] {
        let reader = DocumentReader(transaction: ctx.transaction, tables: ctx.tables)
        // A removed document still has its last version: only present ones count.
        func present(_ collection: String, _ key: String) throws -> JSONValue? {
            guard let s = try reader.state(collection: collection, key: key), !s.removed else { return nil }
            return s.document
        }
        func number(_ o: [String: JSONValue], _ key: String) -> Int { if case .number(let n)? = o[key] { Int(n) ?? 0 } else { 0 } }
        switch event.type {
        case AlertEvents.added:
            let alert = try required(event, "alert")
            guard let body = try ctx.payload(of: event), case .object(var o) = try JSONValue(parsing: body) else {
                throw DocumentError("AlertAdded without a definition")
            }
            o["source"] = .string(try required(event, "source"))
            o["name"] = .string(try required(event, "name"))
            o["addedSeq"] = .number(String(event.seq))
            o["addedId"] = .string(event.id)
            o["addedAt"] = .number(String(event.recordedAt.millisecondsSince1970))
            return [.put(collection: "alerts", key: alert, document: .object(o))]
        case AlertEvents.removed:
            let alert = try required(event, "alert")
            guard try present("alerts", alert) != nil else { return [] }
            var ops: [DocumentOperation] = [.remove(collection: "alerts", key: alert)]
            // What was still to deliver is cancelled with it.
            let prefix = alert + "/"
            for p in try reader.states(collection: "pending") where p.key.hasPrefix(prefix) {
                guard case .object(var n) = p.document, case .string(let id)? = n["id"] else { continue }
                n["state"] = .string(NotificationEntityState.cancelled.rawValue)
                ops += [.put(collection: "notifications", key: id, document: .object(n)), .remove(collection: "pending", key: p.key)]
            }
            return ops
        case AlertEvents.queued:
            let alert = try required(event, "alert")
            guard case .object(var a)? = try present("alerts", alert) else { return [] }
            let n: [String: JSONValue] = [
                "id": .string(event.id), "alert": .string(alert), "source": .string(try required(event, "source")),
                "item": .string(try required(event, "item")), "kind": .string(try required(event, "kind")),
                "seq": .number(String(event.seq)), "pass": .number(event[metadata: "pass"] ?? "0"),
                "state": .string(NotificationEntityState.pending.rawValue), "attempts": .number("0")
            ]
            // About a forgotten item: kept as erased, out of the counts, never delivered (again).
            if fate == .erased {
                var erased = n
                erased["state"] = .string(NotificationEntityState.erased.rawValue)
                return [.put(collection: "notifications", key: event.id, document: .object(erased))]
            }
            a["queued"] = .number(String(number(a, "queued") + 1))
            return [
                .put(collection: "notifications", key: event.id, document: .object(n)),
                .put(collection: "pending", key: pendingKey(alert: alert, seq: event.seq), document: .object(n)),
                .put(collection: "alerts", key: alert, document: .object(a))
            ]
        case AlertEvents.evaluated:
            let source = try required(event, "source")
            guard let through = event[metadata: "through"].flatMap(UInt64.init) else { throw DocumentError("AlertsEvaluated without through") }
            if case .object(let e)? = try present("evaluated", source), number(e, "through") >= through { return [] }
            return [.put(collection: "evaluated", key: source, document: .object(["through": .number(String(through))]))]
        case AlertEvents.sent, AlertEvents.delivered, AlertEvents.failed:
            let id = try required(event, "notification")
            guard case .object(var n)? = try present("notifications", id), case .string(let alert)? = n["alert"] else { return [] }
            // An erased one (its item forgotten) whose attempts are in the log was sent before the
            // forget: what became of it still counts, so a forget leaves the alert's figures as
            // they were; it is just not pending, and keeps no body.
            let erased = n["state"] == .string(NotificationEntityState.erased.rawValue)
            guard erased || n["state"] == .string(NotificationEntityState.pending.rawValue) else { return [] }
            let attempt = event[metadata: "attempt"].flatMap(Int.init) ?? number(n, "attempts")
            n["attempts"] = .number(String(max(attempt, number(n, "attempts"))))
            n["lastAttemptAt"] = .number(String(event.recordedAt.millisecondsSince1970))
            if let status = event[metadata: "status"] { n["status"] = .number(status) }
            var settled: String?
            switch event.type {
            case AlertEvents.delivered:
                settled = "delivered"
                n.removeValue(forKey: "error")
            case AlertEvents.failed:
                n["error"] = .string(event[metadata: "error"] ?? "")
                if event[metadata: "willRetry"] == "false" { settled = "failed" }
            default:
                break
            }
            let key = pendingKey(alert: alert, seq: UInt64(number(n, "seq")))
            guard let settled else {
                if erased { return [.put(collection: "notifications", key: id, document: .object(n))] }
                return [.put(collection: "notifications", key: id, document: .object(n)), .put(collection: "pending", key: key, document: .object(n))]
            }
            n["state"] = .string(settled)
            n["settledSeq"] = .number(String(event.seq))
            if erased { n["erased"] = .bool(true) }
            var ops: [DocumentOperation] = [.put(collection: "notifications", key: id, document: .object(n))]
            if !erased { ops.append(.remove(collection: "pending", key: key)) }
            if case .object(var a)? = try present("alerts", alert) {
                // An erased one was left out of `queued` when it was folded.
                if erased { a["queued"] = .number(String(number(a, "queued") + 1)) }
                a[settled] = .number(String(number(a, settled) + 1))
                ops.append(.put(collection: "alerts", key: alert, document: .object(a)))
            }
            return ops
        default:
            return []
        }
    }
}

extension Timestamp {
    var millisecondsSince1970: Int64 { microseconds / 1000 }
}
