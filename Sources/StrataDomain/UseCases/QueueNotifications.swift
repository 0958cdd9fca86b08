import Foundation
import StrataJSON

/// Matches a source's recorded changes against its alerts and queues a notification for each
/// match. Pass by pass (each `FetchCompleted` against the pass before it), from the last pass
/// evaluated: every pass's notifications and its evaluation mark are one transaction, and a
/// notification's id is a function of the alert, the pass and the item, so a crash anywhere
/// (after a pass, before its evaluation) neither loses a notification nor makes a second one.
package struct QueueNotifications: Sendable {
    let alerts: any AlertRepository
    let log: any EventLogRepository
    let items: any ItemRepository
    let config: ManageConfig?
    let schema: (any SchemaRepository)?

    package init(
        alerts: any AlertRepository, log: any EventLogRepository, items: any ItemRepository, config: ManageConfig?,
        schema: (any SchemaRepository)? = nil
    ) {
        self.alerts = alerts
        self.log = log
        self.items = items
        self.config = config
        self.schema = schema
    }

    /// Evaluates the passes of `source` not evaluated yet; every source with alerts when nil.
    /// Returns how many notifications were queued.
    @discardableResult
    package func callAsFunction(source: String? = nil) async throws -> Int {
        let all = try await alerts.alerts().filter { source == nil || $0.alert.source == source }
        // Every fetch comes here: a source without alerts costs one read and nothing more.
        guard !all.isEmpty else { return 0 }
        let base = try await servedAt()
        var queued = 0
        for name in Set(all.map(\.alert.source)).sorted() {
            queued += try await evaluate(name, all.filter { $0.alert.source == name }, base: base)
        }
        return queued
    }

    private func evaluate(_ source: String, _ watching: [AlertSummary], base: String) async throws -> Int {
        // Passes before the oldest alert cannot match any of them.
        var after = max(try await alerts.evaluatedThrough(source: source), watching.map(\.addedSeq).min() ?? 0)
        var queued = 0
        let drifts = watching.contains { $0.alert.onDrift } ? try await schema?.drift(source: source, after: after) ?? [] : []
        // Each pass is diffed against the one before it: the pass at or before `after` for the
        // first, then the previous of the walk.
        var previous = try await log.entries(LogQuery(stream: source, type: "FetchCompleted", toSeq: after, limit: 1, newestFirst: true)).first?.seq ?? 0
        while true {
            let passes = try await log.entries(LogQuery(stream: source, type: "FetchCompleted", fromSeq: after + 1, limit: 64, newestFirst: false))
            guard !passes.isEmpty else { return queued }
            for pass in passes {
                let diff = try await items.diff(source: source, from: .seq(previous), to: .seq(pass.seq))
                var notifications: [AlertNotification] = []
                for d in diff.items {
                    for summary in watching where summary.addedSeq < pass.seq && summary.alert.matches(d) {
                        notifications.append(
                            AlertNotification(
                                id: alerts.notificationID(alert: summary, item: d.id, pass: pass), alert: summary.alert.key, source: source,
                                item: d.id, kind: d.kind.rawValue, seq: pass.seq, observedAt: pass.recordedAt, title: d.headline, changes: d.changes,
                                url: base + ServePaths.item(source: source, id: d.id)))
                    }
                }
                for drift in drifts where drift.seq > previous && drift.seq <= pass.seq {
                    for summary in watching where summary.addedSeq < pass.seq && summary.alert.matches(drift) {
                        notifications.append(
                            AlertNotification(
                                id: alerts.notificationID(alert: summary, item: "drift:" + drift.path, pass: pass), alert: summary.alert.key, source: source,
                                item: drift.path, kind: "drift", seq: pass.seq, observedAt: drift.observedAt, title: "\(source): \(drift.headline)",
                                changes: [Change(kind: .replaced, path: "/" + drift.path, old: Self.types(drift.before), new: Self.types(drift.after))],
                                url: base + ServePaths.items(source: source)))
                    }
                }
                queued += try await alerts.queue(notifications, source: source, pass: pass)
                previous = pass.seq
                after = pass.seq
            }
        }
    }

    private static func types(_ t: [String]) -> JSONValue? { t.isEmpty ? nil : .array(t.map { .string($0) }) }

    /// Where `strata serve` is reached (`config set serve.url`), for the notifications' links.
    private func servedAt() async throws -> String {
        let configured = try await config?.get("serve.url")
        var url = configured ?? "http://127.0.0.1:8080"
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}
