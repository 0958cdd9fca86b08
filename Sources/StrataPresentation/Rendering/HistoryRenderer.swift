/// Draws an item's versions, each with its field changes.
package struct HistoryRenderer: Sendable {
    package var options: RenderOptions
    package init(options: RenderOptions) { self.options = options }

    package func render(_ h: HistoryViewData) -> String {
        var lines = [
            options.bold(TextCell.fit("\(h.title)  (\(h.source.name)/\(h.id)) · \(h.versions.count) version\(h.versions.count == 1 ? "" : "s")", options.width))
        ]
        let versionWidth = h.versions.map { "v\($0.version)".count }.max() ?? 2
        let seqWidth = h.versions.map { "seq \($0.seq)".count }.max() ?? 5
        for v in h.versions {
            let number = TextCell.pad("v\(v.version)", versionWidth), seq = TextCell.pad("seq \(v.seq)", seqWidth)
            let note =
                (v.backfilled ? "  (backfilled)" : "") + (v.local.map { "  (\($0))" } ?? "") + (v.restored.map { "  (values re-stored \($0))" } ?? "")
            let head =
                options.isNarrow
                ? "\(number)  \(seq)  \(v.kind)  \(v.origin)\n    \(v.time)\(note)"
                : "\(number)  \(seq)  \(v.time)  \(TextCell.pad(v.kind, 10))  \(TextCell.pad(v.origin, 6))  run \(v.run)\(note)"
            let colored = v.kind == "removed" ? options.red(head) : (v.kind == "added" || v.kind == "reappeared" ? options.green(head) : head)
            lines.append(TableLayout.trimTrailing(colored))
            // A re-store changed no data: its placeholders are not listed as changes.
            for c in v.changes where v.restored == nil {
                lines.append(options.changeLine(c))
            }
        }
        lines.append(options.staleness(h.source))
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    /// Cuts a possibly coloured line to `width` visible characters (colour kept only when uncut).
    func truncatedVisible(_ width: Int) -> String {
        TextCell.width(self) <= width ? self : TextCell.fit(strippingEscapes, width)
    }

    var strippingEscapes: String {
        var out = String.UnicodeScalarView()
        var inEscape = false
        for ch in unicodeScalars {
            if inEscape { if (0x40...0x7E).contains(ch.value) && ch != "[" { inEscape = false }; continue }
            if ch == "\u{1B}" { inEscape = true; continue }
            out.append(ch)
        }
        return String(out)
    }
}
