/// A plain text table for the store tools' listings (sources, documents, sessions, the outbox):
/// each column padded to its widest cell, two spaces between, the last column not padded, and a
/// line wider than the terminal cut with `…`. Widths are terminal cells, so wide and combining
/// characters keep the columns aligned.
package struct TextTable: Sendable {
    package var headers: [String]
    package var rows: [[String]] = []

    package init(headers: [String], rows: [[String]] = []) {
        self.headers = headers
        self.rows = rows
    }

    package func render(maxWidth: Int) -> String {
        var widths = headers.map(TextCell.width)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], TextCell.width(c)) } }
        func line(_ cells: [String]) -> String {
            var out = ""
            for (i, c) in cells.enumerated() {
                if i == cells.count - 1 { out += c } else { out += TextCell.pad(c, widths[i]) + "  " }
            }
            return TextCell.width(out) > maxWidth ? TextCell.fit(out, max(1, maxWidth)) : out
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}
