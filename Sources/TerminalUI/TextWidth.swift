import CTextWidth

/// Display widths of grapheme clusters, so that no text shifts the grid: CJK and emoji take two
/// cells, combining marks none (they join their base), and an unknown width counts as one.
package enum TextWidth {
    /// The cells a grapheme takes: 0 (a lone combining mark or control), 1 or 2.
    package static func of(_ c: Character) -> Int {
        let scalars = c.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count == 1, first.value >= 0x20, first.value < 0x7F { return 1 }
        if first.value < 0x20 || (first.value >= 0x7F && first.value < 0xA0) { return 0 }
        if scalars.contains(where: { $0.value == 0xFE0F }) { return 2 }  // emoji presentation
        if isWideEmoji(first.value) { return 2 }
        let w = ctw_wcwidth(first.value)
        if w < 0 { return 1 }
        if w == 0 { return scalars.count > 1 ? 1 : 0 }
        return min(2, Int(w))
    }

    /// The cells a string takes.
    package static func of(_ s: some StringProtocol) -> Int {
        var n = 0
        for c in s { n += of(c) }
        return n
    }

    /// Pictographs that terminals draw two cells wide, including those newer than the C
    /// library's tables (which call them unknown).
    private static func isWideEmoji(_ v: UInt32) -> Bool {
        (0x1F300...0x1F64F).contains(v) || (0x1F680...0x1F6FF).contains(v) || (0x1F900...0x1FAFF).contains(v)
            || (0x1F1E6...0x1F1FF).contains(v)
    }

    /// `text` cut to at most `columns` cells, ending in `…` when it was cut. One pass over the
    /// characters that fit and the first that does not: a value of several KB (an HTML text in
    /// an item's history) cut to half a line measured the whole of it twice, most of a
    /// `strata history` of such items.
    package static func truncate(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        var used = 0
        // The end of the longest start that leaves a cell for the `…`.
        var cut = text.startIndex
        var i = text.startIndex
        while i < text.endIndex {
            used += of(text[i])
            if used > columns { return String(text[..<cut]) + "…" }
            i = text.index(after: i)
            if used <= columns - 1 { cut = i }
        }
        return text
    }

    /// `text` cut or padded with spaces to exactly `columns` cells.
    package static func fit(_ text: String, to columns: Int) -> String {
        let t = truncate(text, to: columns)
        return t + String(repeating: " ", count: max(0, columns - of(t)))
    }
}
