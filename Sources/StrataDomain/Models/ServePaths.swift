import Foundation

/// Where `strata serve` answers a source's items, for links made outside the server (feeds,
/// notifications): one place, so a link and the route it names cannot drift apart.
package enum ServePaths {
    /// `/_strata/sources/SOURCE/items`.
    package static func items(source: String) -> String { "/_strata/sources/" + segment(source) + "/items" }

    /// `/_strata/sources/SOURCE/items/ID`.
    package static func item(source: String, id: String) -> String { items(source: source) + "/" + segment(id) }

    /// A name as one path segment of a URL.
    package static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? s
    }
}
