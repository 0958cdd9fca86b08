import Foundation
package import StrataDomain

/// The watcher's log lines, one per fetch and per delivery attempt: a message, its level and its
/// fields, for a front end to hand to its logger (`strata watch` prints them on stderr).
package enum WatchLogRenderer {
    package enum Level: Sendable { case info, warning }

    package struct Line: Sendable, Equatable {
        package var level: Level
        package var message: String
        package var fields: [String: String]
    }

    /// The line of a fetch, and the retention line that may follow it.
    package static func lines(_ r: WatchReport) -> [Line] {
        var fields = ["source": r.source, "next": LogTime(r.nextDue).iso8601]
        switch r.outcome {
        case .fetched(let f):
            fields["outcome"] = "ok"
            fields["pages"] = String(f.pages)
            fields["notModified"] = String(f.pagesNotModified)
            fields["added"] = String(f.added)
            fields["changed"] = String(f.changed)
            fields["removed"] = String(f.removed)
            fields["seconds"] = String(format: "%.3f", f.seconds)
            if f.notificationsQueued > 0 { fields["notifications"] = String(f.notificationsQueued) }
            if !f.failures.isEmpty { fields["itemFailures"] = String(f.failures.count) }
            var out = [Line(level: .info, message: "fetched", fields: fields)]
            if let d = r.retention {
                out.append(
                    Line(
                        level: .info, message: "retention",
                        fields: ["source": d.source, "horizon": String(d.horizon), "bodies": String(d.bodies), "bytes": String(d.bytes), "seq": String(d.seq)]))
            }
            if let why = r.retentionError { out.append(Line(level: .warning, message: "retention failed", fields: ["source": r.source, "error": why])) }
            return out
        case .failed(let why):
            fields["outcome"] = "failed"
            fields["error"] = why
            return [Line(level: .warning, message: "fetch failed", fields: fields)]
        case .leasedElsewhere(let why):
            fields["outcome"] = "leased-elsewhere"
            fields["reason"] = why
            return [Line(level: .info, message: "not fetched", fields: fields)]
        }
    }

    /// The line of a delivery attempt.
    package static func line(_ a: DeliverNotifications.Attempt) -> Line {
        var fields = ["alert": a.notification.alert, "notification": a.notification.id, "item": a.notification.item, "attempt": String(a.number)]
        switch a.outcome {
        case .delivered(let status):
            fields["outcome"] = "delivered"
            if let status { fields["status"] = String(status) }
            return Line(level: .info, message: "notified", fields: fields)
        case .retry(let why, _), .refused(let why, _):
            fields["outcome"] = a.willRetry ? "retry" : "failed"
            fields["error"] = why
            return Line(level: .warning, message: "notification not delivered", fields: fields)
        }
    }
}
