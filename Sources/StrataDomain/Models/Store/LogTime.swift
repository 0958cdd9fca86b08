public import Foundation
import EventStore

/// A moment as the log keeps it: microseconds since 1970 in UTC.
public struct LogTime: Sendable, Hashable, Comparable {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    public init(_ date: Date) { microseconds = Timestamp(date).microseconds }

    /// Parses ISO 8601 date-times (with fractional seconds or an offset) and plain dates, which
    /// stand for the end of that day in UTC.
    public init?(iso8601 text: String) {
        guard let t = Timestamp(iso8601: text) else { return nil }
        microseconds = t.microseconds
    }

    public var date: Date { Timestamp(microseconds: microseconds).date }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
    public var iso8601: String { Timestamp(microseconds: microseconds).iso8601 }

    public static func < (a: LogTime, b: LogTime) -> Bool { a.microseconds < b.microseconds }
}

/// A point of the log as the store tools name it: an event's seq, or a moment (the last event
/// recorded at or before it).
public enum LogPoint: Sendable, Hashable {
    case seq(UInt64)
    case time(LogTime)

    /// A seq, else an ISO 8601 date or date-time; nil for anything else.
    public init?(text: String) {
        if let s = UInt64(text) { self = .seq(s) } else if let t = LogTime(iso8601: text) { self = .time(t) } else { return nil }
    }
}
