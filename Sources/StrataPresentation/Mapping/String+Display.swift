/// Text from an API made safe for a terminal: control characters (ESC among them, which would
/// let a value move the cursor, recolour or clear the screen) never reach the output as such.
extension String {
    /// For one line (a table cell, a title): a line break as `↵`, a tab as a space, any other
    /// control character as `�`.
    package var displayLine: String { replacingControls(lineBreak: "↵") }

    /// For a value shown across lines (`show`): line breaks kept (`\r\n` and `\r` as `\n`), a tab
    /// as a space, any other control character as `�`.
    var displayText: String { replacingControls(lineBreak: "\n") }

    private func replacingControls(lineBreak: Unicode.Scalar) -> String {
        guard unicodeScalars.contains(where: Self.isControl) else { return self }
        var out = String.UnicodeScalarView()
        var previousCR = false
        for u in unicodeScalars {
            defer { previousCR = u == "\r" }
            if u == "\n" && previousCR { continue }
            if u == "\n" || u == "\r" {
                out.append(lineBreak)
            } else if u == "\t" {
                out.append(" ")
            } else {
                out.append(Self.isControl(u) ? "\u{FFFD}" : u)
            }
        }
        return String(out)
    }

    /// C0, DEL and C1 controls, and the bidirectional overrides that reorder what a line shows.
    static func isControl(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value) || (0x202A...0x202E).contains(u.value) || (0x2066...0x2069).contains(u.value)
    }
}
