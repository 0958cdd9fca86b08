package import Foundation

/// Delivers queued notifications: per alert in the order queued, each attempt recorded before it
/// is made and after it ends, a failed one tried again after a growing wait. A notification
/// keeps its id across attempts, crashes and restarts, so a receiver that saw it already
/// (a crash between sending and recording) recognizes it by its `Idempotency-Key`.
package struct DeliverNotifications: Sendable {
    let alerts: any AlertRepository
    let sender: any NotificationSender
    let clock: any WatchClock
    /// Attempts before a notification is given up as failed.
    package var maxAttempts = 25
    /// Try every notification now, whatever its last attempt (a one-shot delivery by hand).
    package var ignoresRetryDelay = false

    package init(alerts: any AlertRepository, sender: any NotificationSender, clock: any WatchClock = SystemWatchClock()) {
        self.alerts = alerts
        self.sender = sender
        self.clock = clock
    }

    /// Seconds to wait after `attempts` failed attempts: 1, 2, 4, … capped at 5 minutes.
    package static func retryDelay(attempts: Int) -> Double {
        guard attempts > 0 else { return 0 }
        return min(pow(2, Double(min(attempts - 1, 16))), 300)
    }

    /// What one attempt did.
    package struct Attempt: Sendable {
        package var notification: PendingNotification
        package var number: Int
        package var outcome: DeliveryOutcome
        /// False when the attempt settled it as failed.
        package var willRetry: Bool
    }

    /// One round: for each alert, its pending notifications in order until one is not delivered
    /// (the rest wait behind it) or waits for its retry. Returns the attempts made and when the
    /// next retry is due (nil: nothing waits).
    package func round(report: @Sendable (Attempt) -> Void = { _ in }) async throws -> (attempts: [Attempt], nextRetry: Date?) {
        let pending = try await alerts.pending()
        let targets = Dictionary(try await alerts.alerts().map { ($0.alert.key, $0.alert.target) }, uniquingKeysWith: { a, _ in a })
        var blocked = Set<String>()
        var attempts: [Attempt] = []
        var nextRetry: Date?
        for n in pending where !blocked.contains(n.alert) {
            guard let target = targets[n.alert] else { continue }
            if !ignoresRetryDelay, let last = n.lastAttemptAt, n.attempts > 0 {
                let due = last.addingTimeInterval(Self.retryDelay(attempts: n.attempts))
                if due > clock.now() {
                    blocked.insert(n.alert)
                    nextRetry = min(nextRetry ?? due, due)
                    continue
                }
            }
            let number = n.attempts + 1
            let body = try await alerts.body(of: n)
            try await alerts.recordSending(n, attempt: number)
            let outcome = await sender.send(body, notification: n, to: target)
            let willRetry: Bool
            switch outcome {
            case .delivered: willRetry = false
            case .retry: willRetry = number < maxAttempts
            case .refused: willRetry = false
            }
            try await alerts.recordOutcome(n, attempt: number, outcome: outcome, willRetry: willRetry)
            let attempt = Attempt(notification: n, number: number, outcome: outcome, willRetry: willRetry)
            attempts.append(attempt)
            report(attempt)
            if case .delivered = outcome { continue }
            if willRetry {
                blocked.insert(n.alert)
                let due = clock.now().addingTimeInterval(Self.retryDelay(attempts: number))
                nextRetry = min(nextRetry ?? due, due)
            }
        }
        return (attempts, nextRetry)
    }

    /// Delivers until `control` stops: a round, then a sleep until the next retry is due or for
    /// `poll` seconds, whichever is sooner (new notifications are found by the next round).
    package func run(control: WatchControl, poll: Double = 1, report: @escaping @Sendable (Attempt) -> Void, failure: @Sendable (any Error) -> Void) async {
        while !control.isStopped {
            var wait = poll
            do {
                let r = try await round(report: report)
                if let next = r.nextRetry { wait = min(wait, max(0.05, next.timeIntervalSince(clock.now()))) }
            } catch {
                failure(error)
            }
            let until = clock.now().addingTimeInterval(wait)
            while !control.isStopped, clock.now() < until {
                try? await clock.sleep(seconds: min(0.25, until.timeIntervalSince(clock.now())))
            }
        }
    }
}
