import Foundation
import StrataJSON

/// Adds, lists, removes and tries alerts.
package struct ManageAlerts: Sendable {
    let alerts: any AlertRepository
    let sources: any SourceRepository
    let items: any ItemRepository
    let sender: any NotificationSender

    package init(alerts: any AlertRepository, sources: any SourceRepository, items: any ItemRepository, sender: any NotificationSender) {
        self.alerts = alerts
        self.sources = sources
        self.items = items
        self.sender = sender
    }

    /// What `add` is given, before it is checked.
    package struct Draft: Sendable {
        package var source: String
        package var name: String
        package var kinds: [String]
        package var fields: [String]
        package var condition: String?
        package var target: AlertTarget

        package init(source: String, name: String, kinds: [String] = [], fields: [String] = [], condition: String? = nil, target: AlertTarget) {
            self.source = source; self.name = name; self.kinds = kinds; self.fields = fields; self.condition = condition; self.target = target
        }
    }

    /// Checks and adds an alert; it fires for changes recorded from now on.
    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `invalidQuery` for a bad
    ///   name, kind, field, condition (with its position) or target, `conflict` for a name in use.
    @discardableResult
    package func add(_ draft: Draft) async throws -> Alert {
        _ = try await sources.source(named: draft.source)
        let name = draft.name
        guard (1...64).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || "._-".contains($0) }), name.first != "." else {
            throw RepositoryError(.invalidQuery, "an alert's name is 1–64 letters, digits, '.', '_' or '-' (not starting with '.'): \(name.debugDescription)")
        }
        var kinds = Set<ChangeKind>()
        var onDrift = false
        for k in draft.kinds {
            if k.lowercased() == "drift" {
                onDrift = true
                continue
            }
            guard let kind = ChangeKind(rawValue: k.lowercased()) else {
                throw RepositoryError(
                    .invalidQuery, "unknown change kind \(k.debugDescription); kinds: \(ChangeKind.allCases.map(\.rawValue).joined(separator: ", ")), drift")
            }
            kinds.insert(kind)
        }
        for f in draft.fields where f.isEmpty || f.contains(" ") {
            throw RepositoryError(.invalidQuery, "a field is a path like price or owner.name or /owner/name: \(f.debugDescription)")
        }
        var condition: ItemExpression?
        if let text = draft.condition {
            do { condition = try ItemExpression(parsing: text) } catch {
                throw RepositoryError(.invalidQuery, "the condition \(text.debugDescription) is not valid \(error)")
            }
        }
        switch draft.target {
        case .webhook(let url):
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw RepositoryError(.invalidQuery, "a webhook is an http:// or https:// URL: \(url.absoluteString)")
            }
        case .exec(let command):
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else { throw RepositoryError(.invalidQuery, "the command to run is empty") }
        }
        let alert = Alert(
            source: draft.source, name: name, kinds: kinds.isEmpty && !onDrift ? Set(ChangeKind.allCases) : kinds, fields: draft.fields,
            condition: condition, target: draft.target, onDrift: onDrift)
        try await alerts.add(alert)
        return alert
    }

    package func list(source: String? = nil) async throws -> [AlertSummary] {
        if let source { _ = try await sources.source(named: source) }
        return try await alerts.alerts().filter { source == nil || $0.alert.source == source }
    }

    /// The alert's notifications, newest first (its feed).
    /// - Throws: ``RepositoryError`` `notFound` when there is no such alert, `invalidQuery` for a
    ///   limit below 1.
    package func notifications(source: String, name: String, limit: Int = 50) async throws -> [AlertNotification] {
        guard limit > 0 else { throw RepositoryError(.invalidQuery, "the limit must be at least 1") }
        guard try await alerts.alerts().contains(where: { $0.alert.source == source && $0.alert.name == name }) else {
            throw RepositoryError(.notFound, "no alert \(name) on \(source)", next: .listAlerts)
        }
        return try await alerts.notifications(alert: source + "/" + name, limit: limit)
    }

    /// - Throws: ``RepositoryError`` `notFound` when there is no such alert.
    package func remove(source: String, name: String) async throws {
        try await alerts.remove(source: source, name: name)
    }

    /// Sends a sample notification to the alert's receiver, made from the source's first item
    /// (nothing is queued or recorded; its id starts with `test-`), and says how it went.
    package func test(source: String, name: String) async throws -> (notification: AlertNotification, outcome: DeliveryOutcome) {
        guard let summary = try await alerts.alerts().first(where: { $0.alert.source == source && $0.alert.name == name }) else {
            throw RepositoryError(.notFound, "no alert \(name) on \(source)", next: .listAlerts)
        }
        let spec = try await sources.source(named: source)
        let first = try await items.items(ItemQuery(source: source, limit: 1)).items.first
        let id = first?.id ?? "sample"
        let title = first?.title ?? "A sample item"
        let notification = AlertNotification(
            id: "test-" + UUID().uuidString.lowercased(), alert: summary.alert.key, source: source, item: id, kind: ChangeKind.changed.rawValue,
            seq: spec.lastRun?.seq ?? 0,
            observedAt: Date(), title: title + " changed (a test of alert \(name))",
            changes: [Change(kind: .replaced, path: "/sample", old: .string("before"), new: .string("after"))],
            url: "")
        let pending = PendingNotification(
            id: notification.id, alert: notification.alert, source: source, item: id, kind: ChangeKind.changed.rawValue, attempts: 0, lastAttemptAt: nil,
            lastError: nil)
        let outcome = await sender.send(notification.body, notification: pending, to: summary.alert.target)
        return (notification, outcome)
    }
}
