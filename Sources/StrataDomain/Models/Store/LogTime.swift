package import Foundation
import StrataJSON

/// A moment as the log keeps it: microseconds since 1970 in UTC.
package struct LogTime: Sendable, Hashable, Comparable {
    package var microseconds: Int64

    package init(microseconds: Int64) { self.microseconds = microseconds }

    package init(_ date: Date) { microseconds = UTCMicroseconds.of(date) }

    /// Parses ISO 8601 date-times (with fractional seconds or an offset) and plain dates, which
    /// stand for the end of that day in UTC.
    package init?(iso8601 text: String) {
        guard let us = UTCMicroseconds.parse(iso8601: text) else { return nil }
        microseconds = us
    }

    package var date: Date { UTCMicroseconds.date(microseconds) }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
    package var iso8601: String { UTCMicroseconds.iso8601(microseconds) }

    package static func < (a: LogTime, b: LogTime) -> Bool { a.microseconds < b.microseconds }
}

/// A point of the log as the store tools name it: an event's seq, or a moment (the last event
/// recorded at or before it).
package enum LogPoint: Sendable, Hashable {
    case seq(UInt64)
    case time(LogTime)

    /// A seq, else an ISO 8601 date or date-time; nil for anything else.
    package init?(text: String) {
        if let s = UInt64(text) { self = .seq(s) } else if let t = LogTime(iso8601: text) { self = .time(t) } else { return nil }
    }
}
