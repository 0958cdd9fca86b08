package import StrataDomain
package import StrataJSON

/// `strata changes`: every item change of a span. One JSON shape (`item`, `title`, `seq`,
/// `observedAt`, `kind`, `changes`), a table (a line per change, its field changes below it)
/// and CSV (a row per field change).
package struct ChangesRenderer: Sendable {
    package init() {}

    package func json(_ c: ItemChange) -> JSONValue {
        .object([
            "item": .string(c.item), "title": .string(c.title), "seq": .number(String(c.seq)), "observedAt": .string(ISOTime.format(c.observedAt)),
            "kind": .string(c.kind.rawValue), "changes": .array(c.changes.map(JSONValue.init(change:)))
        ])
    }

    package func table(_ changes: [ItemChange], options: RenderOptions) -> String {
        guard !changes.isEmpty else { return "no changes" }
        var lines: [String] = []
        for c in changes {
            let head = "seq \(c.seq)  \(TimeText.format(c.observedAt))  \(c.kind.rawValue)  \(c.item.displayLine)  \(c.title.displayLine)"
            lines.append(options.bold(head.truncatedVisible(options.width)))
            for change in c.changes.prefix(20) { lines.append(options.changeLine(ChangeViewData(change: change))) }
            if c.changes.count > 20 { lines.append("    … \(c.changes.count - 20) more") }
        }
        lines.append("\(changes.count) change\(changes.count == 1 ? "" : "s")")
        return lines.joined(separator: "\n")
    }

    package func csv(_ changes: [ItemChange]) -> String {
        var rows = ["seq,observedAt,kind,item,title,path,old,new"]
        for c in changes {
            let head = [String(c.seq), ISOTime.format(c.observedAt), c.kind.rawValue, c.item, c.title]
            let fields = c.changes.isEmpty ? [["", "", ""]] : c.changes.map { [$0.path, $0.old?.canonicalString ?? "", $0.new?.canonicalString ?? ""] }
            for f in fields { rows.append((head + f).map(CSVRenderer.escape).joined(separator: ",")) }
        }
        return rows.joined(separator: "\n") + "\n"
    }
}
