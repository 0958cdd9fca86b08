public import Foundation
import Synchronization
import StrataJSON

/// A point in time with microsecond resolution, stored as microseconds since 1970-01-01 UTC.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    /// A date far outside the range of microseconds since 1970 is clamped to its ends.
    public init(_ date: Date) { microseconds = UTCMicroseconds.of(date) }

    public var date: Date { UTCMicroseconds.date(microseconds) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.microseconds < b.microseconds }

    /// The microseconds with the sign bit flipped: as 8 big-endian bytes they sort as the times do
    /// under memcmp (the form time takes in every LMDB key).
    public var sortableBits: UInt64 { UInt64(bitPattern: microseconds) ^ (1 << 63) }

    public init(sortableBits bits: UInt64) { microseconds = Int64(bitPattern: bits ^ (1 << 63)) }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
    public var iso8601: String { UTCMicroseconds.iso8601(microseconds) }

    public var description: String { iso8601 }

    /// Parses ISO 8601 date-times (`2026-11-22T08:00:00Z`, with fractional seconds or an offset)
    /// and plain dates (`2026-11-22`, taken as the end of that day in UTC).
    public init?(iso8601 text: String) {
        guard let us = UTCMicroseconds.parse(iso8601: text) else { return nil }
        microseconds = us
    }
}

/// The source of `recordedAt` times. Injected so that tests and replays are deterministic.
public protocol EventClock: Sendable {
    func now() -> Timestamp
}

/// The wall clock.
public struct SystemClock: EventClock {
    public init() {}
    public func now() -> Timestamp { Timestamp(Date()) }
}

/// A clock that starts at a given time and advances by a fixed step on every reading.
public final class SteppingClock: EventClock, Sendable {
    private let current: Mutex<Timestamp>
    private let step: Int64

    public init(start: Timestamp = Timestamp(microseconds: 1_767_225_600_000_000), stepMicroseconds: Int64 = 1_000_000) {
        current = Mutex(start)
        step = stepMicroseconds
    }

    public func now() -> Timestamp {
        let step = self.step
        return current.withLock { current in
            let t = current
            current.microseconds += step
            return t
        }
    }
}
