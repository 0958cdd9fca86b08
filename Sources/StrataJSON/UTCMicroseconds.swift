public import Foundation

/// Times as the log keeps them, microseconds since 1970 in UTC, to and from ISO 8601: one
/// conversion for the engine's `Timestamp` and the Domain's `LogTime`.
public enum UTCMicroseconds {
    /// A date far outside the range of microseconds since 1970 (about ±292,000 years), which
    /// only a computed date like "now minus 10^300 seconds" reaches, is clamped to its ends.
    public static func of(_ date: Date) -> Int64 {
        let us = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return us.isNaN ? 0 : us >= 9.2e18 ? .max : us <= -9.2e18 ? .min : Int64(us)
    }

    public static func date(_ microseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }

    /// ISO 8601 in UTC with milliseconds, e.g. `2026-11-22T08:00:00.000Z`.
    public static func iso8601(_ microseconds: Int64) -> String {
        date(microseconds).formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// Parses ISO 8601 date-times (`2026-11-22T08:00:00Z`, with fractional seconds or an offset)
    /// and plain dates (`2026-11-22`, taken as the end of that day in UTC).
    public static func parse(iso8601 text: String) -> Int64? {
        let s = text.trimmingCharacters(in: .whitespaces)
        if let d = try? Date(s, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)) {
            return of(d)
        }
        if let d = try? Date(s, strategy: .iso8601) { return of(d) }
        if let d = try? Date(s, strategy: .iso8601.year().month().day().dateSeparator(.dash)) {
            // A bare date means "as of the end of that day".
            return of(d) + 86_400_000_000 - 1
        }
        return nil
    }
}
