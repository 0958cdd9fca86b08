/// Writes a list as CSV (RFC 4180): id, title, subtitle, the field columns, image, removed.
package struct CSVRenderer: Sendable {
    package init() {}

    package func render(_ list: ItemListViewData) -> String {
        var out = [(["id", "title", "subtitle"] + list.columns + ["image", "removed"]).map(Self.escape).joined(separator: ",")]
        for r in list.rows {
            let fields = list.columns.indices.map { $0 < r.fields.count ? r.fields[$0] : "" }
            out.append(
                ([r.id, r.title, r.subtitle] + fields + [r.picture == "-" ? "" : r.picture, r.isRemoved ? "true" : "false"])
                    .map(Self.escape).joined(separator: ","))
        }
        return out.joined(separator: "\r\n") + "\r\n"
    }

    static func escape(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }
}
