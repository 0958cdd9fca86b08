import Foundation
import StrataDomain
import TerminalUI
import Testing

@testable import StrataPresentation

/// Values made safe for a terminal and cut to a cell: the byte-level passes give what the
/// character-level ones they replaced gave, on values of every kind (controls, `\r\n`, C1
/// controls, bidirectional overrides, combining marks, wide and emoji characters, escapes).
@Suite struct DisplayTextTests {
    static let pieces: [String] = [
        "a", "Z", " ", "é", "e\u{301}", "日本", "😀", "👍🏽", "🇫🇷", "\n", "\r", "\r\n", "\t", "\u{0}", "\u{7}", "\u{1B}[31m",
        "\u{7F}", "\u{80}", "\u{85}", "\u{9F}", "\u{A0}", "\u{202A}", "\u{202E}", "\u{202F}", "\u{2066}", "\u{2069}", "\u{206A}",
        "\u{200B}", "\u{FFFD}", "<p>", "word ", String(repeating: "x", count: 40)
    ]

    static func values(_ count: Int, seed: UInt64) -> [String] {
        // A linear congruential sequence: the same values on every run.
        var state = seed
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        return (0..<count).map { _ in (0..<Int(next() % 30)).map { _ in pieces[Int(next() % UInt64(pieces.count))] }.joined() }
    }

    /// What `replacingControls` did scalar by scalar before.
    static func reference(_ s: String, lineBreak: Unicode.Scalar) -> String {
        guard s.unicodeScalars.contains(where: String.isControl) else { return s }
        var out = String.UnicodeScalarView()
        var previousCR = false
        for u in s.unicodeScalars {
            defer { previousCR = u == "\r" }
            if u == "\n" && previousCR { continue }
            if u == "\n" || u == "\r" {
                out.append(lineBreak)
            } else if u == "\t" {
                out.append(" ")
            } else {
                out.append(String.isControl(u) ? "\u{FFFD}" : u)
            }
        }
        return String(out)
    }

    /// What `TextWidth.truncate` did before: measure the whole, then cut.
    static func referenceTruncate(_ text: String, to columns: Int) -> String {
        guard columns > 0 else { return "" }
        if TextWidth.of(text) <= columns { return text }
        var out = ""
        var used = 0
        for c in text {
            let w = TextWidth.of(c)
            if used + w > columns - 1 { break }
            out.append(c)
            used += w
        }
        return out + "…"
    }

    @Test func controlsAreReplacedAsBefore() {
        for value in Self.values(3_000, seed: 1) + [String(repeating: "<p>a\r\nb\u{202E}c</p>\n", count: 500)] {
            #expect(value.displayLine == Self.reference(value, lineBreak: "↵"), "\(value.debugDescription)")
            #expect(value.displayText == Self.reference(value, lineBreak: "\n"), "\(value.debugDescription)")
        }
    }

    @Test func cutsAreAsBefore() {
        for value in Self.values(2_000, seed: 2) {
            for columns in [0, 1, 2, 3, 5, 8, 13, 40, 200] {
                #expect(TextWidth.truncate(value, to: columns) == Self.referenceTruncate(value, to: columns), "\(value.debugDescription) at \(columns)")
                // Every line break and tab becomes a space, a `\r\n`'s too.
                let flat = value.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
                #expect(!flat.utf8.contains(0x0A))
                let expected = columns <= 0 ? "" : TextCell.width(flat) > columns ? Self.referenceTruncate(flat, to: columns) : flat
                let got = TextCell.fit(value, columns)
                #expect(got == expected, "\(value.debugDescription) fit to \(columns): \(got.debugDescription) against \(expected.debugDescription)")
            }
        }
    }
}
