import StrataDomain

/// Text from an API made safe for a terminal: control characters (ESC among them, which would
/// let a value move the cursor, recolour or clear the screen) never reach the output as such.
extension String {
    /// For one line (a table cell, a title): a line break as `↵`, a tab as a space, any other
    /// control character as `�`.
    package var displayLine: String { replacingControls(lineBreak: "↵") }

    /// For a value shown across lines (`show`): line breaks kept (`\r\n` and `\r` as `\n`), a tab
    /// as a space, any other control character as `�`.
    var displayText: String { replacingControls(lineBreak: "\n") }
}
