import Foundation
package import StrataJSON

extension ItemDiff {
    /// One line for a feed entry or a notification: `RAV4 (3) changed: price 12300 → 11900,
    /// km 10 → 12`; `RAV4 (3) added`. At most three changes, then "and N more".
    package var headline: String {
        let name = title.isEmpty || title == id ? id : "\(title) (\(id))"
        guard kind == .changed, !changes.isEmpty else { return "\(name) \(kind.rawValue)" }
        let shown = changes.prefix(3).map { c in "\(Self.field(c.path)) \(Self.text(c.old)) → \(Self.text(c.new))" }
        return "\(name) changed: " + shown.joined(separator: ", ") + (changes.count > 3 ? ", and \(changes.count - 3) more" : "")
    }

    /// A JSON Pointer as people write the field: `/owner/name` → `owner.name`.
    package static func field(_ pointer: String) -> String {
        pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .map { $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") }.joined(separator: ".")
    }

    /// A value on one line: text as it is, anything else as JSON; a line break as `↵`, a tab as
    /// a space, other control characters as `�`; absent as `—`.
    package static func text(_ v: JSONValue?) -> String {
        guard let v else { return "—" }
        let s = if case .string(let s) = v { s } else { v.canonicalString }
        var out = String.UnicodeScalarView()
        var previousCR = false
        for u in s.unicodeScalars {
            defer { previousCR = u == "\r" }
            if u == "\n" && previousCR { continue }
            if u == "\n" || u == "\r" {
                out.append("↵")
            } else if u == "\t" {
                out.append(" ")
            } else {
                let control =
                    u.value < 0x20 || (0x7F...0x9F).contains(u.value) || (0x202A...0x202E).contains(u.value) || (0x2066...0x2069).contains(u.value)
                out.append(control ? "\u{FFFD}" : u)
            }
        }
        return String(out)
    }
}
