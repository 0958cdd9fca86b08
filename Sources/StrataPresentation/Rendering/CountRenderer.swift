package import StrataDomain
package import StrataJSON

/// `strata count`: how many items match, by the values at the `--by` paths (facets). One JSON
/// shape (an array of objects: each path with its value, and `count`), a table and CSV.
package struct CountRenderer: Sendable {
    /// The paths counted by, in the order given.
    let by: [String]

    package init(by: [String]) { self.by = by }

    package func json(_ counts: [ItemCount]) -> [JSONValue] {
        counts.map { c in
            var o: [String: JSONValue] = ["count": .number(String(c.count))]
            for (path, value) in zip(by, c.values) { o[path] = value ?? .null }
            return .object(o)
        }
    }

    /// The table: a column per path and COUNT; without paths, the total alone.
    package func table(_ counts: [ItemCount], maxWidth: Int) -> String {
        guard !by.isEmpty else { return "\(counts.first?.count ?? 0) items" }
        var t = TextTable(headers: by.map { $0.uppercased() } + ["COUNT"])
        for c in counts { t.rows.append(c.values.map { Self.text($0) } + [String(c.count)]) }
        return t.render(maxWidth: maxWidth) + "\n\(counts.count) groups, \(counts.reduce(0) { $0 + $1.count }) counted"
    }

    package func csv(_ counts: [ItemCount]) -> String {
        var lines = [(by + ["count"]).map(CSVRenderer.escape).joined(separator: ",")]
        for c in counts { lines.append((c.values.map { Self.text($0) } + [String(c.count)]).map(CSVRenderer.escape).joined(separator: ",")) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A value as a cell (``JSONValue/displayText``); `(none)` where an item has none.
    static func text(_ v: JSONValue?) -> String { v?.displayText.displayLine ?? "(none)" }
}
