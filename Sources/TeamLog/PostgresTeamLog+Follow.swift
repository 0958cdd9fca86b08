package import EventStore
import Foundation
import PostgresNIO

/// Following the log: a pull whenever a push commits, and a poll besides.
///
/// Every append ends with `NOTIFY strata_events` inside its transaction, so PostgreSQL delivers
/// it at commit. A follower keeps one connection `LISTEN`ing and pulls when a notification
/// arrives. Notifications are not queued for a listener that is not connected: when the
/// connection drops (a server restart, a cut network) the ones sent meanwhile are lost, so the
/// follower pulls as soon as it listens again, and polls every `poll` whatever happens (a
/// connection that hangs rather than fails says nothing at all).
extension PostgresTeamLog {
    /// Pulls into `store` after `position` now, then on every notification and at least every
    /// `poll`, until the task is cancelled. `onPull` gets each pull's report (the position to
    /// keep). A pull that fails (the server away) is retried at the next wake-up; a changed row
    /// or another log (`corrupted`, `diverged`) ends the follow with that error.
    package func follow(
        into store: EventStore, after position: UInt64, poll: Duration,
        onPull: (PullReport) async throws -> Void
    ) async throws {
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: poll)
                wake.yield()
            }
        }
        let listener = Task { [client, logger] in
            while !Task.isCancelled {
                do {
                    try await client.withConnection { conn in
                        try await conn.listen(on: "strata_events") { notifications in
                            wake.yield()  // listening again: what was sent meanwhile is lost, so pull
                            for try await _ in notifications { wake.yield() }
                        }
                    }
                } catch {
                    logger.debug("team log: listening stopped (\(String(describing: type(of: error)))); polling until it is back")
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        defer {
            ticker.cancel()
            listener.cancel()
            wake.finish()
        }
        var position = position
        wake.yield()
        for await _ in wakes {
            try Task.checkCancellation()
            let report: PullReport
            do {
                report = try await pull(into: store, after: position)
            } catch let e as TeamLogError where e.code == .connection {
                logger.warning("team log: \(e.message); trying again at the next notification or poll")
                continue
            }
            position = report.position
            try await onPull(report)
        }
    }
}
