/// Draws one item in full: title, status, picture and every field.
package struct ItemDetailRenderer: Sendable {
    package var options: RenderOptions
    package init(options: RenderOptions) { self.options = options }

    package func render(_ d: ItemDetailViewData) -> String {
        var lines: [String] = []
        let head = TextCell.fit("\(d.title)  (\(d.source.name)/\(d.id))", options.width)
        lines.append(options.bold(head))
        if !d.subtitle.isEmpty { lines.append(TextCell.fit(d.subtitle, options.width)) }
        var status = d.status
        if let a = d.asOf { status += " · as of \(a)" }
        lines.append(d.isRemoved ? options.red(TextCell.fit(status, options.width)) : options.dim(TextCell.fit(status, options.width)))
        if let thumb = d.thumbnail { lines += thumb }
        if d.picture != "-" { lines.append(TextCell.fit("image: \(d.picture)", options.width)) }
        lines.append("")
        if options.isNarrow {
            for f in d.fields {
                lines.append(options.cyan(TextCell.fit(f.label, options.width)))
                lines += TextCell.wrap(f.value, options.width - 2).map { "  " + $0 }
            }
        } else {
            let labelWidth = min(40, d.fields.map { $0.label.unicodeScalars.count }.max() ?? 5)
            for f in d.fields {
                let label = TextCell.pad(TextCell.fit(f.label, labelWidth), labelWidth)
                let value = TextCell.wrap(f.value, options.width - labelWidth - 2)
                lines.append(options.cyan(label) + "  " + value[0])
                lines += value.dropFirst().map { String(repeating: " ", count: labelWidth + 2) + $0 }
            }
        }
        lines.append("")
        if let e = d.refreshError { lines.append(options.message("could not download the detail (\(e)); showing the stored one", options.yellow)) }
        lines.append(options.staleness(d.source))
        return lines.map(TableLayout.trimTrailing).joined(separator: "\n") + "\n"
    }
}
