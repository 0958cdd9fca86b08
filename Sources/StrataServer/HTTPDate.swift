import Foundation

/// Dates as HTTP writes them (RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`), for
/// `Memento-Datetime`, `Accept-Datetime` and `Link` datetimes.
enum HTTPDate {
    private static let formatter: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f
    }()
    private static let lock = NSLock()

    static func format(_ date: Date) -> String { lock.withLock { formatter.string(from: date) } }

    /// nil for anything that is not an IMF-fixdate.
    static func parse(_ text: String) -> Date? {
        lock.withLock { formatter.date(from: text.trimmingCharacters(in: .whitespaces)) }
    }
}
