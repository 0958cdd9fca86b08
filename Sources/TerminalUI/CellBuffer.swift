/// One cell of the screen: a grapheme, the columns it takes, what it means, and colours of its
/// own where it has any (a thumbnail's pixels). The cell right of a wide grapheme holds an empty
/// grapheme of width 0.
package struct Cell: Sendable, Hashable {
    package var grapheme: String
    package var width: UInt8
    package var role: StyleRole
    package var foreground: Color?
    package var background: Color?

    package init(_ grapheme: String = " ", width: UInt8 = 1, role: StyleRole = .normal, foreground: Color? = nil, background: Color? = nil) {
        self.grapheme = grapheme; self.width = width; self.role = role; self.foreground = foreground; self.background = background
    }

    package static let blank = Cell()
    var isContinuation: Bool { width == 0 }
}

/// A grid of cells that views render into; the ``FrameEncoder`` writes the difference of two.
package struct CellBuffer: Sendable, Hashable {
    package let size: Size
    package private(set) var cells: [Cell]

    package init(size: Size) {
        self.size = size
        cells = Array(repeating: .blank, count: max(0, size.columns) * max(0, size.rows))
    }

    package var area: Rect { Rect(width: size.columns, height: size.rows) }

    package subscript(x: Int, y: Int) -> Cell {
        get { cells[y * size.columns + x] }
    }

    /// Sets one cell, keeping wide graphemes whole: a cell written over half of a wide grapheme
    /// blanks the other half.
    package mutating func set(_ x: Int, _ y: Int, _ cell: Cell) {
        guard x >= 0, y >= 0, x < size.columns, y < size.rows else { return }
        let i = y * size.columns + x
        if cells[i].isContinuation, x > 0 { cells[i - 1] = Cell(role: cells[i - 1].role) }
        if cells[i].width == 2, x + 1 < size.columns { cells[i + 1] = Cell(role: cells[i].role) }
        cells[i] = cell
    }

    /// Gives every cell of `rect` the role, keeping the text (a selection bar, a highlight).
    package mutating func paint(_ rect: Rect, role: StyleRole) {
        for y in max(0, rect.y)..<min(size.rows, rect.maxY) {
            for x in max(0, rect.x)..<min(size.columns, rect.maxX) { cells[y * size.columns + x].role = role }
        }
    }

    /// Fills `rect` with blanks of a role.
    package mutating func fill(_ rect: Rect, role: StyleRole = .normal, with grapheme: String = " ") {
        for y in max(0, rect.y)..<min(size.rows, rect.maxY) {
            for x in max(0, rect.x)..<min(size.columns, rect.maxX) { set(x, y, Cell(grapheme, role: role)) }
        }
    }

    /// Writes `text` from (x, y), at most `width` cells (to the buffer's edge when nil), cut with
    /// `…` when longer. Returns the columns written. Controls are dropped; a wide grapheme that
    /// would cross the edge becomes a space.
    @discardableResult
    package mutating func write(_ text: String, x: Int, y: Int, width: Int? = nil, role: StyleRole = .normal) -> Int {
        guard y >= 0, y < size.rows, x < size.columns else { return 0 }
        let limit = min(width ?? (size.columns - x), size.columns - x)
        guard limit > 0 else { return 0 }
        let shown = TextWidth.of(text) > limit ? TextWidth.truncate(text, to: limit) : text
        var col = x
        for c in shown {
            let w = TextWidth.of(c)
            if w == 0 { continue }
            if col + w > x + limit { break }
            if col >= 0 {
                set(col, y, Cell(String(c), width: UInt8(w), role: role))
                if w == 2 { set(col + 1, y, Cell("", width: 0, role: role)) }
            }
            col += w
        }
        return col - x
    }

    /// Writes `text` in a rectangle of `rect.width` cells on row y, padded with spaces of the
    /// same role (a status bar, a selected row).
    package mutating func writeLine(_ text: String, in rect: Rect, row: Int = 0, role: StyleRole = .normal) {
        guard row < rect.height else { return }
        fill(Rect(x: rect.x, y: rect.y + row, width: rect.width, height: 1), role: role)
        write(text, x: rect.x, y: rect.y + row, width: rect.width, role: role)
    }

    /// Text in segments of different roles on one row, left to right, cut at `rect`'s edge.
    @discardableResult
    package mutating func write(segments: [(String, StyleRole)], x: Int, y: Int, width: Int) -> Int {
        var used = 0
        for (text, role) in segments where used < width {
            used += write(text, x: x + used, y: y, width: width - used, role: role)
        }
        return used
    }

    /// A box around `rect` with an optional title in its top border.
    package mutating func box(_ rect: Rect, title: String? = nil, ascii: Bool = false, role: StyleRole = .border, titleRole: StyleRole = .title) {
        guard rect.width >= 2, rect.height >= 2 else { return }
        let (h, v, tl, tr, bl, br) = ascii ? ("-", "|", "+", "+", "+", "+") : ("─", "│", "┌", "┐", "└", "┘")
        for x in rect.x..<rect.maxX {
            set(x, rect.y, Cell(h, role: role))
            set(x, rect.maxY - 1, Cell(h, role: role))
        }
        for y in rect.y..<rect.maxY {
            set(rect.x, y, Cell(v, role: role))
            set(rect.maxX - 1, y, Cell(v, role: role))
        }
        set(rect.x, rect.y, Cell(tl, role: role)); set(rect.maxX - 1, rect.y, Cell(tr, role: role))
        set(rect.x, rect.maxY - 1, Cell(bl, role: role)); set(rect.maxX - 1, rect.maxY - 1, Cell(br, role: role))
        if let title, rect.width > 4 { write(" \(title) ", x: rect.x + 1, y: rect.y, width: rect.width - 2, role: titleRole) }
    }

    /// Copies cells (a thumbnail) with their own colours to (x, y), clipped to the buffer.
    package mutating func blit(_ rows: [[Cell]], x: Int, y: Int, width: Int? = nil) {
        for (dy, row) in rows.enumerated() {
            var col = x
            for cell in row {
                if let width, col - x >= width { break }
                set(col, y + dy, cell)
                col += 1
            }
        }
    }

    /// The text of every row, trailing spaces kept (golden tests).
    package var text: [String] {
        (0..<size.rows).map { y in
            var line = ""
            for x in 0..<size.columns { line += self[x, y].grapheme }
            return line
        }
    }

    /// One role code per column of every row (``StyleRole/code``; `*` for a cell with colours of
    /// its own): the style half of a golden screen.
    package var styleMap: [String] {
        (0..<size.rows).map { y in
            String(
                (0..<size.columns).map { x in
                    let c = self[x, y]
                    return c.foreground != nil || c.background != nil ? "*" : c.role.code
                })
        }
    }
}
