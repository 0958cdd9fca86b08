import EventStore
import Foundation
package import StrataData
package import StrataDomain
import StrataJSON

/// ``AlertRepository`` over the `alerts` projection and the log.
package struct LMDBAlertRepository: AlertRepository {
    let tables: AlertTables

    package init(tables: AlertTables) {
        self.tables = tables
    }

    package func alerts() async throws -> [AlertSummary] {
        try await storage {
            try await tables.alerts().compactMap { e in
                Alert(source: e.source, name: e.name, definition: e.definition).map {
                    AlertSummary(alert: $0, addedSeq: e.addedSeq, addedID: e.addedId, queued: e.queued, delivered: e.delivered, failed: e.failed)
                }
            }.sorted { ($0.alert.source, $0.alert.name) < ($1.alert.source, $1.alert.name) }
        }
    }

    package func add(_ alert: Alert) async throws {
        if try await storage({ try await tables.alert(source: alert.source, name: alert.name) }) != nil {
            throw RepositoryError(
                .conflict, "\(alert.source) already has an alert named \(alert.name)", next: .removeAlert(source: alert.source, name: alert.name))
        }
        try await storage { try await tables.add(source: alert.source, name: alert.name, definition: alert.definition) }
    }

    package func remove(source: String, name: String) async throws {
        guard try await storage({ try await tables.alert(source: source, name: name) }) != nil else {
            throw RepositoryError(.notFound, "no alert \(name) on \(source)", next: .listAlerts)
        }
        try await storage { try await tables.remove(source: source, name: name) }
    }

    package func evaluatedThrough(source: String) async throws -> UInt64 {
        try await storage { try await tables.evaluatedThrough(source: source) }
    }

    package func notificationID(alert: AlertSummary, item: String, pass: LogEntry) -> String {
        // The id of the alert's own event, not its name: an alert removed and added again starts
        // afresh. Event ids, not seqs: the same on every node of a team log.
        "ntf-" + Hashing.sha256(Array((alert.addedID + "\u{0}" + pass.id + "\u{0}" + item).utf8), prefix: 16).hex
    }

    package func queue(_ notifications: [AlertNotification], source: String, pass: LogEntry) async throws -> Int {
        let queued = notifications.map { n in QueuedNotification(id: n.id, alert: n.alert, item: n.item, kind: n.kind, pass: n.seq, body: n.json) }
        return try await storage { try await tables.queue(queued, source: source, through: pass.seq, passID: pass.id) }
    }

    package func notifications(alert: String, limit: Int) async throws -> [AlertNotification] {
        try await storage { try await tables.notificationBodies(alert: alert, limit: limit) }.compactMap { entry in
            (try? JSONValue(parsing: entry.body)).flatMap(AlertNotification.init(json:))
        }
    }

    package func pending() async throws -> [PendingNotification] {
        try await storage {
            try await tables.pending().map {
                PendingNotification(
                    id: $0.id, alert: $0.alert, source: $0.source, item: $0.item, kind: $0.kind, attempts: $0.attempts, lastAttemptAt: $0.lastAttemptAt,
                    lastError: $0.error, queuedSeq: $0.seq)
            }
        }
    }

    package func body(of notification: PendingNotification) async throws -> [UInt8] {
        guard let body = try await storage({ try await tables.body(queuedAt: notification.queuedSeq) }) else {
            throw RepositoryError(.storage, "notification \(notification.id) has no stored body", next: .verifyStore)
        }
        return body
    }

    package func recordSending(_ notification: PendingNotification, attempt: Int) async throws {
        try await record(.sent, notification, attempt)
    }

    package func recordOutcome(_ notification: PendingNotification, attempt: Int, outcome: DeliveryOutcome, willRetry: Bool) async throws {
        switch outcome {
        case .delivered(let status): try await record(.delivered(status: status), notification, attempt)
        case .retry(let error, let status), .refused(let error, let status):
            try await record(.failed(error: error, status: status, willRetry: willRetry), notification, attempt)
        }
    }

    private func record(_ attempt: AlertTables.Attempt, _ n: PendingNotification, _ number: Int) async throws {
        try await storage { try await tables.record(attempt, notification: n.id, alert: n.alert, number: number) }
    }
}
