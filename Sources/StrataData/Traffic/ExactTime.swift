public import EventStore

/// RFC 3339 date-times read and written to the microsecond in integer arithmetic, so a HAR's
/// `startedDateTime` or a WARC's `WARC-Date` goes in and comes out unchanged (a `Date` in
/// between rounds the fraction).
public enum ExactTime {
    /// `2026-11-28T07:00:00Z`, `…:00.123Z`, `…:00.123456+01:00`; nil for anything else.
    public static func parse(_ text: String) -> Timestamp? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= b.count else { return nil }
            var v = 0
            for i in at..<at + n {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45, let day = digits(8, 2),
            b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = digits(11, 2), b[13] == 58, let minute = digits(14, 2), b[16] == 58,
            let second = digits(17, 2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var micros = 0
        if i < b.count && (b[i] == 46 || b[i] == 44) {
            i += 1
            var scale = 100_000
            let start = i
            while i < b.count, b[i] >= 48 && b[i] <= 57 {
                micros += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        guard i < b.count else { return nil }
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = digits(i + 4, 2) {
            offset = (oh * 60 + om) * 60 * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        return Timestamp(microseconds: seconds * 1_000_000 + Int64(micros))
    }

    /// UTC, with milliseconds when the time has no finer part, else microseconds:
    /// `2026-11-28T07:00:00.123Z`, `2026-11-28T07:00:00.123456Z`.
    public static func format(_ t: Timestamp) -> String {
        let us = t.microseconds
        var seconds = us / 1_000_000
        var fraction = us % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (y, m, d) = civilFromDays(Int(days))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let frac = fraction % 1000 == 0 ? pad(Int(fraction / 1000), 3) : pad(Int(fraction), 6)
        return "\(pad(y, 4))-\(two(m))-\(two(d))T\(two(Int(rest / 3600))):\(two(Int(rest % 3600 / 60))):\(two(Int(rest % 60))).\(frac)Z"
    }

    /// Whole seconds, as WARC 1.0 readers expect: `2026-11-28T07:00:00Z`.
    public static func formatSeconds(_ t: Timestamp) -> String {
        let s = format(Timestamp(microseconds: t.microseconds - ((t.microseconds % 1_000_000) + 1_000_000) % 1_000_000))
        return String(s.prefix(19)) + "Z"
    }

    private static func pad(_ v: Int, _ n: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, n - s.count)) + s
    }

    // Howard Hinnant's days_from_civil and civil_from_days.
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
