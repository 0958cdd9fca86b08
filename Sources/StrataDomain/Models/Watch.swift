package import Foundation
import Synchronization

/// The watcher's time: the wall clock in use, an injected one in tests.
package protocol WatchClock: Sendable {
    func now() -> Date
    /// Waits `seconds` (less when the task is cancelled).
    func sleep(seconds: Double) async throws
}

/// The wall clock.
package struct SystemWatchClock: WatchClock {
    package init() {}
    package func now() -> Date { Date() }
    package func sleep(seconds: Double) async throws { try await Task.sleep(for: .milliseconds(Int(max(0, seconds) * 1000))) }
}

/// What the watcher is told from outside while it runs: stop after the fetch in flight
/// (SIGTERM, SIGINT), or read the sources' definitions again (SIGHUP).
package final class WatchControl: Sendable {
    private struct State {
        var stopped = false
        var reload = false
    }
    private let state = Mutex(State())

    package init() {}

    package func stop() { state.withLock { $0.stopped = true } }
    package func reload() { state.withLock { $0.reload = true } }
    package var isStopped: Bool { state.withLock { $0.stopped } }

    /// Whether a reload was asked for since the last call.
    package func takeReload() -> Bool {
        state.withLock { s in
            defer { s.reload = false }
            return s.reload
        }
    }
}

/// A scheduled source as the watcher sees it: its schedule, its last fetch and when it is due.
package struct WatchedSource: Sendable, Hashable {
    package var name: String
    package var schedule: SourceSchedule
    /// When the source was last fetched, by anyone (the log's last pass over its list).
    package var lastAttempt: Date?
    /// Failed fetches in a row, the last one included.
    package var failures: Int
    package var nextDue: Date
    /// The host of its list's URL: the watcher limits requests in flight per host.
    package var host = ""
    /// Whether it keeps a window (`keep`, `keepVersions`): the watcher applies it after fetches.
    package var retains = false

    package init(name: String, schedule: SourceSchedule, lastAttempt: Date?, failures: Int) {
        self.name = name
        self.schedule = schedule
        self.lastAttempt = lastAttempt
        self.failures = failures
        nextDue = Self.nextDue(name: name, schedule: schedule, lastAttempt: lastAttempt, failures: failures)
    }

    /// Seconds the watcher waits after a failure: the schedule's interval doubled for each
    /// failure in a row, capped at an hour (or the interval, when that is longer).
    package static func backoff(every: Double, failures: Int) -> Double {
        guard failures > 0 else { return every }
        return min(every * pow(2, Double(min(failures, 20))), max(every, 3_600))
    }

    /// When a source is next due: now if it was never fetched; else its last fetch plus its
    /// interval (or the back-off after failures), moved by its jitter. The jitter is a function
    /// of the source and its last fetch, so a restarted watcher plans the same times.
    package static func nextDue(name: String, schedule: SourceSchedule, lastAttempt: Date?, failures: Int) -> Date {
        guard let last = lastAttempt else { return .distantPast }
        let wait = backoff(every: schedule.every, failures: failures)
        guard schedule.jitter > 0 else { return last.addingTimeInterval(wait) }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in (name + "\u{0}" + String(Int64(last.timeIntervalSince1970 * 1000))).utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        let unit = Double(h % 2_000_001) / 1_000_000 - 1  // -1…1
        return last.addingTimeInterval(wait * (1 + Double(schedule.jitter) / 100 * unit))
    }
}

/// What one watched fetch did.
package struct WatchReport: Sendable {
    package enum Outcome: Sendable {
        case fetched(RefreshResult)
        /// The list could not be fetched (the failure is in the log).
        case failed(String)
        /// Another node of the team log holds the source's lease: not fetched.
        case leasedElsewhere(String)
    }

    package var source: String
    /// When it was due (`distantPast` when never fetched) and when its fetch started: the
    /// difference is the schedule's lateness.
    package var due: Date = .distantPast
    package var started: Date
    package var outcome: Outcome
    /// When the source is due again.
    package var nextDue: Date
    /// What the source's retention dropped after this fetch, when it was due and moved.
    package var retention: RetentionDrop?
    /// Why applying the source's retention failed (the fetch stands).
    package var retentionError: String?
}
