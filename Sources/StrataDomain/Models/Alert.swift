package import Foundation
import StrataJSON

/// Where an alert's notifications go.
package enum AlertTarget: Sendable, Hashable {
    /// `POST` of the notification's JSON.
    case webhook(URL)
    /// A shell command run with the JSON on stdin.
    case exec(String)
}

/// An alert: which changes of a source's items are worth telling someone about, and whom.
package struct Alert: Sendable, Hashable {
    package var source: String
    package var name: String
    /// The change kinds it fires on (every kind when it was added without `on`).
    package var kinds: Set<ChangeKind>
    /// Fires only for changes touching one of these fields (JSON Pointers or dotted paths);
    /// every change when empty.
    package var fields: [String]
    package var condition: ItemExpression?
    package var target: AlertTarget
    /// Fires on drift of the source's shape too (a field added or gone, a type changed).
    package var onDrift: Bool

    package init(
        source: String, name: String, kinds: Set<ChangeKind> = Set(ChangeKind.allCases), fields: [String] = [], condition: ItemExpression? = nil,
        target: AlertTarget, onDrift: Bool = false
    ) {
        self.source = source
        self.name = name
        self.kinds = kinds
        self.onDrift = onDrift
        self.fields = fields
        self.condition = condition
        self.target = target
    }

    /// `SOURCE/NAME`: how notifications, feeds and metrics name it.
    package var key: String { source + "/" + name }

    /// Whether a change of one item matches: its kind is one of `kinds`, it touches one of
    /// `fields` (an added or removed item touches the fields it has), and `condition` holds
    /// between the item after the change (`new`) and before it (`old`).
    package func matches(_ diff: ItemDiff) -> Bool {
        guard kinds.contains(diff.kind) else { return false }
        if !fields.isEmpty {
            let touched: Bool
            switch diff.kind {
            case .added, .removed:
                let doc = diff.after ?? diff.before
                touched = fields.contains { f in
                    let path = f.hasPrefix("/") ? String(f.dropFirst()).replacingOccurrences(of: "/", with: ".") : f
                    return doc?.value(atPath: path) != nil
                }
            case .changed, .reappeared:
                touched = diff.changes.contains { c in fields.contains { c.touches($0) } }
            }
            guard touched else { return false }
        }
        if let condition, !condition.matches(new: diff.after, old: diff.before) { return false }
        return true
    }

    /// Whether a drift of the source's shape matches: the alert fires on drift and, given
    /// fields, the drifted path is one of them or inside one.
    package func matches(_ drift: SchemaDrift) -> Bool {
        guard onDrift else { return false }
        guard !fields.isEmpty else { return true }
        let path = drift.path.hasPrefix("detail:") ? String(drift.path.dropFirst(7)) : drift.path
        return fields.contains { f in
            let field = f.hasPrefix("/") ? String(f.dropFirst()).replacingOccurrences(of: "/", with: ".") : f
            return path == field || path.hasPrefix(field + ".") || path.hasPrefix(field + "[]")
        }
    }
}

/// An alert with how its notifications fared.
package struct AlertSummary: Sendable, Hashable {
    package var alert: Alert
    /// The seq it was added at: it fires for changes recorded after it.
    package var addedSeq: UInt64
    /// The id of the event that added it.
    package var addedID: String
    package var queued: Int
    package var delivered: Int
    package var failed: Int
    package var pending: Int { max(0, queued - delivered - failed) }

    package init(alert: Alert, addedSeq: UInt64, addedID: String, queued: Int, delivered: Int, failed: Int) {
        self.alert = alert
        self.addedSeq = addedSeq
        self.addedID = addedID
        self.queued = queued
        self.delivered = delivered
        self.failed = failed
    }
}

/// One notification: one item's change that matched an alert. Its `id` is fixed when it is
/// queued and is the `Idempotency-Key` of every attempt to deliver it.
package struct AlertNotification: Sendable, Hashable {
    package var id: String
    /// `SOURCE/NAME`.
    package var alert: String
    package var source: String
    package var item: String
    /// A ``ChangeKind``'s name, or `drift` for a change of the source's shape.
    package var kind: String
    /// The pass that recorded the change, and when it observed it.
    package var seq: UInt64
    package var observedAt: Date
    package var title: String
    package var changes: [Change]
    /// The item in `strata serve`.
    package var url: String

    package init(
        id: String, alert: String, source: String, item: String, kind: String, seq: UInt64, observedAt: Date, title: String, changes: [Change],
        url: String
    ) {
        self.id = id; self.alert = alert; self.source = source; self.item = item; self.kind = kind; self.seq = seq
        self.observedAt = observedAt; self.title = title; self.changes = changes; self.url = url
    }
}

/// Where a notification is on its way.
package enum NotificationState: String, Sendable, Hashable {
    case pending, delivered, failed, cancelled
}

/// A notification waiting for delivery, as the deliverer reads it.
package struct PendingNotification: Sendable, Hashable {
    package var id: String
    package var alert: String
    package var source: String
    package var item: String
    package var kind: String
    package var attempts: Int
    package var lastAttemptAt: Date?
    package var lastError: String?
    /// The seq it was queued at (its body is that event's payload).
    package var queuedSeq: UInt64

    package init(
        id: String, alert: String, source: String, item: String, kind: String, attempts: Int, lastAttemptAt: Date?, lastError: String?,
        queuedSeq: UInt64 = 0
    ) {
        self.id = id; self.alert = alert; self.source = source; self.item = item; self.kind = kind; self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt; self.lastError = lastError; self.queuedSeq = queuedSeq
    }
}

/// What one delivery attempt came to.
package enum DeliveryOutcome: Sendable, Hashable {
    case delivered(status: Int?)
    /// Try again later.
    case retry(String, status: Int?)
    /// Refused for good.
    case refused(String, status: Int?)
}
