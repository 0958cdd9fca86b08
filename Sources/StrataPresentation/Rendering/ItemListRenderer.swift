/// Draws an item list: a table on wide terminals (thumbnails in the first column when drawn),
/// cards on narrow ones; a footer with the range and the staleness line.
package struct ItemListRenderer: Sendable {
    package var options: RenderOptions
    package init(options: RenderOptions) { self.options = options }

    package func render(_ list: ItemListViewData, refreshMessage: String? = nil) -> String {
        var lines: [String] = []
        if list.rows.isEmpty {
            lines.append(list.total == 0 ? "no items\(list.asOf.map { " as of \($0)" } ?? "")" : "no items on this page (\(list.total) in all)")
        } else if options.isNarrow {
            lines += cards(list)
        } else {
            lines += table(list)
        }
        lines.append(options.message(footer(list), options.dim))
        if let refreshMessage { lines.append(options.message(refreshMessage, refreshMessage.contains("failed") ? options.red : options.dim)) }
        lines.append(options.staleness(list.source))
        return lines.joined(separator: "\n") + "\n"
    }

    func footer(_ list: ItemListViewData) -> String {
        var parts: [String] = []
        if list.rows.isEmpty {
            parts.append("0 of \(list.total)")
        } else {
            let first = list.offset + 1, last = list.offset + list.rows.count
            parts.append(first == 1 && last == list.total ? "\(list.total) item\(list.total == 1 ? "" : "s")" : "\(first)–\(last) of \(list.total)")
        }
        if let a = list.asOf { parts.append("as of \(a)") }
        if list.usedIndex { parts.append("read through an index") }
        return parts.joined(separator: " · ")
    }

    private func table(_ list: ItemListViewData) -> [String] {
        let thumbWidth = list.rows.compactMap { $0.thumbnail?.first.map(TextCell.width) }.max()
        var columns: [TableLayout.Column] = [
            .init(header: "ID", cells: list.rows.map(\.id), flexible: true, maximum: 24),
            .init(
                header: "TITLE", cells: list.rows.map { ($0.isRemoved ? $0.title + " (removed)" : $0.title) + ($0.pending.map { " [\($0)]" } ?? "") },
                flexible: true),
            .init(header: "SUBTITLE", cells: list.rows.map(\.subtitle), flexible: true)
        ]
        for (i, name) in list.columns.enumerated() {
            columns.append(.init(header: name.uppercased(), cells: list.rows.map { i < $0.fields.count ? $0.fields[i] : "" }, flexible: true, maximum: 24))
        }
        if thumbWidth == nil, list.rows.contains(where: { $0.picture != "-" }) {
            columns.append(.init(header: "IMAGE", cells: list.rows.map(\.picture), flexible: true, maximum: 60))
        }
        if list.rows.allSatisfy({ $0.subtitle.isEmpty }) { columns.remove(at: 2) }
        let lead = thumbWidth.map { $0 + 2 } ?? 0
        let widths = TableLayout.widths(columns, total: options.width - lead)
        let pad = String(repeating: " ", count: lead)
        var out = [options.bold(pad + TableLayout.line(columns.map(\.header), widths))]
        for (r, row) in list.rows.enumerated() {
            let text = TableLayout.line(columns.map { $0.cells[r] }, widths)
            let styled = row.isRemoved ? options.red(text) : text
            guard let thumb = row.thumbnail, let tw = thumbWidth else { out.append(pad + styled); continue }
            for (i, t) in thumb.enumerated() {
                out.append(TextCell.pad(t, tw) + "  " + (i == 0 ? styled : ""))
            }
            if thumb.isEmpty { out.append(pad + styled) }
        }
        return out.map(TableLayout.trimTrailing)
    }

    private func cards(_ list: ItemListViewData) -> [String] {
        var out: [String] = []
        let inner = options.width - 4
        for row in list.rows {
            let head = TextCell.fit("\(row.id)  \(row.title)", options.width - (row.isRemoved ? 10 : 0))
            out.append(options.bold(head) + (row.isRemoved ? options.red(" (removed)") : "") + (row.pending.map { options.yellow(" [\($0)]") } ?? ""))
            for t in row.thumbnail ?? [] { out.append("    " + t) }
            if !row.subtitle.isEmpty { out.append("    " + TextCell.fit(row.subtitle, inner)) }
            let fields = zip(list.columns, row.fields).filter { !$0.1.isEmpty }.map { "\($0.0)=\($0.1)" }
            if !fields.isEmpty { out.append("    " + TextCell.fit(fields.joined(separator: "  "), inner)) }
            if row.thumbnail == nil, row.picture != "-" { out.append("    " + options.dim(TextCell.fit(row.picture, inner))) }
        }
        return out
    }
}
