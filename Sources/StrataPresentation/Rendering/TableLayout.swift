/// Column widths for a table that must fit a terminal: every column gets its natural width,
/// then the flexible ones shrink (widest first) until the row fits, never below `minimum`.
struct TableLayout {
    struct Column {
        var header: String
        var cells: [String]
        var flexible: Bool
        var maximum: Int = .max
    }

    static func widths(_ columns: [Column], total: Int, gap: Int = 2, minimum: Int = 6) -> [Int] {
        var widths = columns.map { c in min(c.maximum, max(TextCell.width(c.header), c.cells.map(TextCell.width).max() ?? 0)) }
        let budget = total - gap * max(0, columns.count - 1)
        while widths.reduce(0, +) > budget {
            let candidates = columns.indices.filter { columns[$0].flexible && widths[$0] > minimum }
            guard let widest = candidates.max(by: { widths[$0] < widths[$1] }) else { break }
            widths[widest] -= 1
        }
        return widths
    }

    /// One line of cells, each cut and padded to its width; the last cell is not padded.
    static func line(_ cells: [String], _ widths: [Int], gap: Int = 2) -> String {
        var out = ""
        for (i, cell) in cells.enumerated() {
            let fitted = TextCell.fit(cell, widths[i])
            out += i == cells.count - 1 ? fitted : TextCell.pad(fitted, widths[i]) + String(repeating: " ", count: gap)
        }
        return trimTrailing(out)
    }

    static func trimTrailing(_ s: String) -> String {
        var s = s
        while s.hasSuffix(" ") { s.removeLast() }
        return s
    }
}
