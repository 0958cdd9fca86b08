import TerminalUI

/// How to draw: the terminal's width, whether colour is on, and how the front end words the
/// way out of a problem. Below 80 columns the narrow (card) layouts are used, at 80 and above the
/// wide (table) ones.
package struct RenderOptions: Sendable, Hashable {
    package var width: Int
    package var color: Bool
    package var wording: FrontEndWording

    package init(width: Int, color: Bool, wording: FrontEndWording = .plain) {
        self.width = max(20, width)
        self.color = color
        self.wording = wording
    }

    // The wording is the front end's, the same for every draw: options compare by their layout.
    package static func == (a: RenderOptions, b: RenderOptions) -> Bool { a.width == b.width && a.color == b.color }
    package func hash(into hasher: inout Hasher) {
        hasher.combine(width)
        hasher.combine(color)
    }

    package var isNarrow: Bool { width < 80 }

    func bold(_ s: String) -> String { wrap(s, "1") }
    func dim(_ s: String) -> String { wrap(s, "2") }
    func red(_ s: String) -> String { wrap(s, "31") }
    func green(_ s: String) -> String { wrap(s, "32") }
    func yellow(_ s: String) -> String { wrap(s, "33") }
    func cyan(_ s: String) -> String { wrap(s, "36") }

    private func wrap(_ s: String, _ code: String) -> String {
        color && !s.isEmpty ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s
    }

    /// Colours a change line by its mark.
    func change(_ c: ChangeViewData) -> String {
        switch c.mark {
        case .added: green(c.text)
        case .removed: red(c.text)
        case .replaced: yellow(c.text)
        }
    }

    /// An indented change line: values cut to half the width each, the line to the width.
    package func changeLine(_ c: ChangeViewData) -> String {
        let cut = ChangeViewData(mark: c.mark, path: c.path, old: c.old.map { TextCell.fit($0, width / 2) }, new: c.new.map { TextCell.fit($0, width / 2) })
        return "    " + change(cut).truncatedVisible(width - 4)
    }

    /// The staleness line(s), wrapped to the width: dim when fresh, red when the last fetch failed.
    func staleness(_ s: SourceViewData) -> String {
        let lines = TextCell.wrap(s.stalenessText(wording), width)
        if case .failed = s.freshness { return lines.map(red).joined(separator: "\n") }
        return lines.map(dim).joined(separator: "\n")
    }

    /// A message wrapped to the width, each line styled.
    func message(_ text: String, _ style: (String) -> String) -> String {
        TextCell.wrap(text, width).map(style).joined(separator: "\n")
    }
}

/// Plain-text measuring and cutting that ignores ANSI escape sequences.
enum TextCell {
    /// The cells a text takes on a terminal (escape sequences excluded; CJK and emoji two,
    /// combining marks none).
    static func width(_ s: String) -> Int {
        // Plain ASCII, the common case, counts its bytes.
        if s.utf8.allSatisfy({ $0 < 0x80 && $0 != 0x1B }) { return s.utf8.count }
        return TextWidth.of(s.utf8.contains(0x1B) ? s.strippingEscapes : s)
    }

    /// Cuts plain text to `width` cells, ending with `…` when cut; newlines become spaces.
    static func fit(_ s: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        // By bytes: looking for a character walks every grapheme of a long value, and missed the
        // line feed of a `\r\n` (one character), which then reached the terminal.
        let flat =
            s.utf8.contains { $0 == 0x0A || $0 == 0x09 }
            ? String(decoding: s.utf8.map { $0 == 0x0A || $0 == 0x09 ? 0x20 : $0 }, as: UTF8.self) : s
        if flat.utf8.contains(0x1B) {
            guard self.width(flat) > width else { return flat }
            return TextWidth.truncate(flat, to: width)
        }
        // Short plain ASCII (the common case) is measured by its bytes; anything else once, by
        // the cut itself, which stops a cell past the width.
        if flat.utf8.count <= width && flat.utf8.allSatisfy({ $0 < 0x80 }) { return flat }
        return TextWidth.truncate(flat, to: width)
    }

    /// Word-wraps plain text to `width`, continuation lines indented by two spaces; words
    /// longer than a line are cut.
    static func wrap(_ text: String, _ width: Int) -> [String] {
        // Each line of a multi-line value wraps on its own; the lines after the first line up
        // under it.
        guard text.contains("\n") else { return wrapLine(text, width) }
        return text.split(separator: "\n", omittingEmptySubsequences: false).flatMap { wrapLine(String($0), width) }
    }

    private static func wrapLine(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true).map(String.init) {
            let room = width - (lines.isEmpty ? 0 : 2)
            let candidate = current.isEmpty ? word : current + " " + word
            if Self.width(candidate) <= room {
                current = candidate
            } else {
                if !current.isEmpty { lines.append(current) }
                current = fit(word, width - 2)
            }
        }
        if !current.isEmpty || lines.isEmpty { lines.append(current) }
        return lines.enumerated().map { $0.offset == 0 ? $0.element : "  " + $0.element }
    }

    /// Pads (visible width) to `width` with spaces.
    static func pad(_ s: String, _ width: Int) -> String {
        let w = self.width(s)
        return w >= width ? s : s + String(repeating: " ", count: width - w)
    }
}
