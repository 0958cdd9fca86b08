import Foundation
import StrataDomain
import StrataJSON

/// The UI's addresses, built from names and ids that may hold anything: each path segment and
/// query value percent-encoded, so a value never becomes part of another.
package enum Links {
    static let segmentAllowed: CharacterSet = {
        var s = CharacterSet.alphanumerics
        s.insert(charactersIn: "-._~")
        return s
    }()

    package static func segment(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: segmentAllowed) ?? "" }

    package static func query(_ path: String, _ items: [(String, String)]) -> String {
        guard !items.isEmpty else { return path }
        return path + "?" + items.map { segment($0.0) + "=" + segment($0.1) }.joined(separator: "&")
    }

    static func source(_ name: String, asOf: String?) -> String {
        query("/_strata/ui/sources/\(segment(name))", asOf.map { [("as_of", $0)] } ?? [])
    }

    static func itemPath(_ source: String, _ id: String) -> String { "/_strata/ui/sources/\(segment(source))/items/\(segment(id))" }

    static func item(_ source: String, _ id: String, asOf: String?) -> String {
        query(itemPath(source, id), asOf.map { [("as_of", $0)] } ?? [])
    }

    static func image(_ source: String, _ id: String, asOf: String?) -> String {
        query(itemPath(source, id) + "/image", asOf.map { [("as_of", $0)] } ?? [])
    }

    /// Whether a value from the data may be a link: http and https only (never `javascript:`,
    /// `data:` or anything else a browser would run or open).
    static func isWeb(_ text: String) -> Bool {
        let lower = text.prefix(8).lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: text) else { return false }
        return url.host != nil && !text.contains(where: { $0.isWhitespace || $0.unicodeScalars.contains { $0.value < 0x20 } })
    }
}

/// Word-level differences between two texts: each side's words, marked where they are not in
/// the other (a longest common subsequence of words, whitespace kept with them).
enum WordDiff {
    static func words(_ s: String) -> [String] {
        var out: [String] = []
        var current = ""
        for ch in s {
            current.append(ch)
            if ch.isWhitespace { out.append(current); current = "" }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// A part of a text: `same`, `gone` or `added`, the other two false (the template asks for
    /// all three; a missing key is looked for in every enclosing context).
    static func part(_ kind: String, _ text: String) -> [String: Any] {
        ["same": kind == "same", "gone": kind == "gone", "added": kind == "added", "text": text]
    }

    /// The parts of the old text (`same` or `gone`) and of the new one (`same` or `added`). Texts
    /// of more than 2,000 words each are marked whole: the table is quadratic.
    static func parts(_ old: String, _ new: String) -> ([[String: Any]], [[String: Any]]) {
        let a = words(old), b = words(new)
        guard a.count <= 2_000, b.count <= 2_000 else { return ([part("gone", old)], [part("added", new)]) }
        // lcs[i][j]: the longest common subsequence of a[i...] and b[j...].
        var lcs = [[Int32]](repeating: [Int32](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        var left: [[String: Any]] = [], right: [[String: Any]] = []
        func add(_ list: inout [[String: Any]], _ key: String, _ text: String) {
            if let last = list.last, last[key] as? Bool == true, let t = last["text"] as? String {
                list[list.count - 1]["text"] = t + text
            } else {
                list.append(part(key, text))
            }
        }
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                add(&left, "same", a[i]); add(&right, "same", b[j]); i += 1; j += 1
            } else if j < b.count, i == a.count || lcs[i][j + 1] >= lcs[i + 1][j] {
                add(&right, "added", b[j]); j += 1
            } else {
                add(&left, "gone", a[i]); i += 1
            }
        }
        return (left, right)
    }
}

/// A numeric field's values over an item's versions as the points of an SVG polyline (numbers
/// only: nothing from the data reaches the markup but through the template's escaping).
struct Chart {
    var path: String
    var values: [Double]
    let width = 600.0, height = 160.0

    init?(path: String, versions: [ItemVersion]) {
        let values = versions.compactMap { v -> Double? in
            guard case .number(let n) = v.document.value(atPath: path) ?? .null else { return nil }
            return Double(n)
        }.filter(\.isFinite)
        guard values.count >= 1 else { return nil }
        self.path = path
        self.values = values
    }

    var context: [String: Any] {
        let lo = values.min()!, hi = values.max()!
        let span = hi - lo == 0 ? 1 : hi - lo
        let step = values.count > 1 ? width / Double(values.count - 1) : 0
        let points = values.enumerated().map { i, v in
            String(format: "%.1f,%.1f", Double(i) * step, height - 8 - (v - lo) / span * (height - 16))
        }.joined(separator: " ")
        return [
            "path": path, "width": Int(width), "height": Int(height),
            "points": values.count == 1 ? points + " \(Int(width)),\(points.split(separator: ",").last!)" : points,
            "min": Self.text(lo), "max": Self.text(hi), "count": values.count
        ]
    }

    static func text(_ d: Double) -> String { d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d) }
}
