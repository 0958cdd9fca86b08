import Foundation

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
