/// Encodes a frame as the bytes that turn the previous screen into the next: cursor moves and SGR
/// runs for the cells that changed, inside one synchronized-output update (`CSI ?2026h … l`,
/// ignored by terminals that lack it), so the terminal never shows half a frame.
package struct FrameEncoder: Sendable {
    package var theme: Theme

    package init(theme: Theme) { self.theme = theme }

    /// The bytes for `next`; everything is drawn when there is no `previous` of the same size
    /// (the first frame, a resize, Ctrl-L).
    package func encode(previous: CellBuffer?, next: CellBuffer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out += Self.beginSync
        let full = previous?.size != next.size
        if full { out += Self.bytes("\u{1B}[0m\u{1B}[H\u{1B}[2J") }
        var pen: Appearance? = full ? .plain : nil
        var cursor: (x: Int, y: Int)? = nil
        let columns = next.size.columns
        for y in 0..<next.size.rows {
            var x = 0
            while x < columns {
                let cell = next[x, y]
                if cell.isContinuation { x += 1; continue }
                let changed =
                    full || previous![x, y] != cell
                    || (cell.width == 2 && x + 1 < columns && previous![x + 1, y] != next[x + 1, y])
                // A blank cell that was blank stays; one that changed is drawn.
                if !changed || (full && cell == .blank) { x += 1; continue }
                if cursor == nil || cursor! != (x, y) {
                    // Re-drawing a gap of up to 3 unchanged narrow cells costs less than a move.
                    if let c = cursor, c.y == y, x > c.x, x - c.x <= 3,
                        (c.x..<x).allSatisfy({ next[$0, y].width == 1 && appearance(of: next[$0, y]) == pen })
                    {
                        for gx in c.x..<x { out += Self.bytes(next[gx, y].grapheme) }
                    } else {
                        out += Self.bytes("\u{1B}[\(y + 1);\(x + 1)H")
                    }
                }
                let look = appearance(of: cell)
                if look != pen {
                    out += sgr(look)
                    pen = look
                }
                out += Self.bytes(cell.grapheme.isEmpty ? " " : cell.grapheme)
                x += Int(max(1, cell.width))
                cursor = (x, y)
            }
        }
        out += Self.bytes("\u{1B}[0m")
        out += Self.endSync
        return out
    }

    func appearance(of cell: Cell) -> Appearance {
        var a = theme.appearance(cell.role)
        if theme.usesColor {
            if let f = cell.foreground { a.foreground = f }
            if let b = cell.background { a.background = b }
        }
        return a
    }

    func sgr(_ a: Appearance) -> [UInt8] {
        var codes = ["0"]
        if a.attributes.contains(.bold) { codes.append("1") }
        if a.attributes.contains(.dim) { codes.append("2") }
        if a.attributes.contains(.italic) { codes.append("3") }
        if a.attributes.contains(.underline) { codes.append("4") }
        if a.attributes.contains(.reverse) { codes.append("7") }
        if a.attributes.contains(.strikethrough) { codes.append("9") }
        if let f = a.foreground { codes.append(Self.color(f, base: 30)) }
        if let b = a.background { codes.append(Self.color(b, base: 40)) }
        return Self.bytes("\u{1B}[" + codes.joined(separator: ";") + "m")
    }

    static func color(_ c: Color, base: Int) -> String {
        switch c {
        case .indexed(let n) where n < 8: "\(base + Int(n))"
        case .indexed(let n) where n < 16: "\(base + 60 + Int(n) - 8)"
        case .indexed(let n): "\(base + 8);5;\(n)"
        case let .rgb(r, g, b): "\(base + 8);2;\(r);\(g);\(b)"
        }
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    static let beginSync = bytes("\u{1B}[?2026h")
    static let endSync = bytes("\u{1B}[?2026l")
}
