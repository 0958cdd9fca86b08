import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// Dates as HTTP writes them (RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`), for
/// `Memento-Datetime`, `Accept-Datetime` and `Link` datetimes. By hand with `gmtime_r`/`timegm`:
/// several go out with every response, and Foundation's `DateFormatter` costs tens of
/// microseconds a call on Linux.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formatted seconds: a recording's dates go out with every answer of it (`Link` names up to
    /// five), and the same few are formatted again and again.
    private static let recent = Mutex<[Int: String]>([:])

    static func format(_ date: Date) -> String {
        let second = Int(date.timeIntervalSince1970.rounded(.down))
        if let s = recent.withLock({ $0[second] }) { return s }
        let s = formatted(second)
        recent.withLock { cache in
            if cache.count >= 4096 { cache.removeAll(keepingCapacity: true) }
            cache[second] = s
        }
        return s
    }

    private static func formatted(_ second: Int) -> String {
        var t = time_t(second)
        var tm = tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }

    /// nil for anything that is not an IMF-fixdate.
    static func parse(_ text: String) -> Date? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())), parts[5] == "GMT",
            let day = Int32(parts[1]), (1...31).contains(day), let month = months.firstIndex(of: String(parts[2])),
            let year = Int32(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let h = Int32(clock[0]), let m = Int32(clock[1]), let s = Int32(clock[2]),
            (0...23).contains(h), (0...59).contains(m), (0...60).contains(s)
        else { return nil }
        var tm = tm()
        tm.tm_year = year - 1900; tm.tm_mon = Int32(month); tm.tm_mday = day; tm.tm_hour = h; tm.tm_min = m; tm.tm_sec = s
        return Date(timeIntervalSince1970: TimeInterval(timegm(&tm)))
    }
}
