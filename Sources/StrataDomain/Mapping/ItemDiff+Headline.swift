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
        return s.replacingControls(lineBreak: "↵")
    }
}
