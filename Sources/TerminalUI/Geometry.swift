/// A rectangle of cells: columns `x ..< x + width`, rows `y ..< y + height`.
package struct Rect: Sendable, Hashable, CustomStringConvertible {
    package var x: Int
    package var y: Int
    package var width: Int
    package var height: Int

    package init(x: Int = 0, y: Int = 0, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = max(0, width); self.height = max(0, height)
    }

    package var maxX: Int { x + width }
    package var maxY: Int { y + height }
    package var isEmpty: Bool { width == 0 || height == 0 }
    package var description: String { "\(width)x\(height)@\(x),\(y)" }

    /// The rectangle shrunk by `dx` columns on each side and `dy` rows on top and bottom.
    package func inset(dx: Int = 1, dy: Int = 1) -> Rect {
        Rect(x: x + dx, y: y + dy, width: width - 2 * dx, height: height - 2 * dy)
    }

    /// The first `rows` rows, and the rest.
    package func splitTop(_ rows: Int) -> (top: Rect, rest: Rect) {
        let r = min(max(0, rows), height)
        return (Rect(x: x, y: y, width: width, height: r), Rect(x: x, y: y + r, width: width, height: height - r))
    }

    /// The last `rows` rows, and the rest above them.
    package func splitBottom(_ rows: Int) -> (rest: Rect, bottom: Rect) {
        let r = min(max(0, rows), height)
        return (Rect(x: x, y: y, width: width, height: height - r), Rect(x: x, y: maxY - r, width: width, height: r))
    }

    /// The first `columns` columns, and the rest.
    package func splitLeft(_ columns: Int) -> (left: Rect, rest: Rect) {
        let c = min(max(0, columns), width)
        return (Rect(x: x, y: y, width: c, height: height), Rect(x: x + c, y: y, width: width - c, height: height))
    }

    /// A `width` × `height` rectangle centred in this one (clipped to it).
    package func centered(width w: Int, height h: Int) -> Rect {
        let cw = min(w, width), ch = min(h, height)
        return Rect(x: x + (width - cw) / 2, y: y + (height - ch) / 2, width: cw, height: ch)
    }

    /// One row of the rectangle (relative to its top).
    package func row(_ i: Int) -> Rect { Rect(x: x, y: y + i, width: width, height: i < height ? 1 : 0) }
}

/// A terminal's size in cells.
package struct Size: Sendable, Hashable, CustomStringConvertible {
    package var columns: Int
    package var rows: Int
    package init(columns: Int, rows: Int) { self.columns = columns; self.rows = rows }
    package var description: String { "\(columns)x\(rows)" }
}
