import Testing
@testable import TerminalUI

@Suite struct BufferTests {
    @Test func widthsOfGraphemes() {
        #expect(TextWidth.of("a") == 1)
        #expect(TextWidth.of("漢字") == 4)
        #expect(TextWidth.of("😀") == 2)
        #expect(TextWidth.of("e\u{301}") == 1)  // e + combining acute: one grapheme, one cell
        #expect(TextWidth.of("❤\u{FE0F}") == 2)  // VS16: emoji presentation
        #expect(TextWidth.of("🫨") == 2)  // Unicode 15: unknown to glibc 2.36, still two
        #expect(TextWidth.of("👩‍💻") == 2)  // ZWJ sequence
    }

    @Test func truncationCutsByColumnsWithAnEllipsis() {
        #expect(TextWidth.truncate("Toyota Corolla", to: 8) == "Toyota …")
        #expect(TextWidth.truncate("漢字漢字", to: 5) == "漢字…")
        #expect(TextWidth.truncate("short", to: 8) == "short")
        #expect(TextWidth.fit("漢", to: 4) == "漢  ")
    }

    @Test func wideGraphemesNeverShiftTheGrid() {
        var b = CellBuffer(size: Size(columns: 6, rows: 1))
        b.write("a漢😀bc", x: 0, y: 0)
        #expect(b.text == ["a漢😀…"])  // 7 columns of text in 6: cut, with the ellipsis
        #expect(b[1, 0].width == 2 && b[2, 0].width == 0)
        // Writing over half of a wide grapheme blanks the other half.
        b.write("x", x: 2, y: 0)
        #expect(b.text == ["a x😀…"])
        // A wide grapheme that would cross the edge is not drawn half.
        var c = CellBuffer(size: Size(columns: 3, rows: 1))
        c.write("ab漢", x: 0, y: 0)
        #expect(c.text == ["ab…"])
    }

    @Test func ansiThumbnailRowsBecomeCellsWithTheirColours() {
        let cells = ANSIText.cells("\u{1B}[38;2;255;0;0;48;5;17m▀▄\u{1B}[0m ")
        #expect(cells.count == 3)
        #expect(cells[0].foreground == .rgb(255, 0, 0) && cells[0].background == .indexed(17))
        #expect(cells[2].foreground == nil && cells[2].grapheme == " ")
    }

    @Test func theThemeFollowsCOLORFGBG() {
        #expect(Theme.detect(colorfgbg: "0;15").name == "light")
        #expect(Theme.detect(colorfgbg: "15;0").name == "dark")
        #expect(Theme.detect(colorfgbg: nil).name == "dark")
    }
}

@Suite struct FrameEncoderTests {
    /// Applies encoded bytes to a model screen: a tiny terminal that knows CUP, SGR and text.
    static func apply(_ bytes: [UInt8], to screen: inout [[String]]) {
        let s = String(decoding: bytes, as: UTF8.self)
        var x = 0, y = 0
        var it = Array(s)[...]
        while let c = it.first {
            it = it.dropFirst()
            if c == "\u{1B}" {
                guard it.first == "[" else { continue }
                it = it.dropFirst()
                var params = ""
                while let p = it.first, !p.isLetter, p != "~" { params.append(p); it = it.dropFirst() }
                let f = it.first; it = it.dropFirst()
                if f == "H" {
                    let n = params.split(separator: ";").compactMap { Int($0) }
                    y = (n.first ?? 1) - 1; x = (n.count > 1 ? n[1] : 1) - 1
                } else if f == "J" {
                    screen = screen.map { $0.map { _ in " " } }
                }
                continue
            }
            screen[y][x] = String(c)
            x += TextWidth.of(c)
        }
    }

    @Test func theDiffTurnsThePreviousScreenIntoTheNextAndWritesOnlyWhatChanged() {
        let size = Size(columns: 20, rows: 4)
        var a = CellBuffer(size: size)
        a.write("list of cars", x: 0, y: 0, role: .heading)
        a.write("1 Corolla", x: 0, y: 1, role: .selection)
        a.write("2 Civic", x: 0, y: 2)
        var b = a
        b.write("1 Corolla", x: 0, y: 1)
        b.write("2 Civic", x: 0, y: 2, role: .selection)
        let encoder = FrameEncoder(theme: .dark)
        var screen = Array(repeating: Array(repeating: " ", count: 20), count: 4)
        Self.apply(encoder.encode(previous: nil, next: a), to: &screen)
        #expect(screen.map { $0.joined() } == a.text)
        let diff = encoder.encode(previous: a, next: b)
        Self.apply(diff, to: &screen)
        #expect(screen.map { $0.joined() } == b.text)
        // Two rows of text changed style: about two runs' worth of bytes, not a repaint.
        #expect(diff.count < 80, "\(diff.count) bytes")
        #expect(encoder.encode(previous: b, next: b).count == FrameEncoder.beginSync.count + 4 + FrameEncoder.endSync.count)
    }

    @Test func monochromeUsesAttributesNotColours() {
        let encoder = FrameEncoder(theme: .monochrome)
        var b = CellBuffer(size: Size(columns: 4, rows: 1))
        b.write("ab", x: 0, y: 0, role: .selection)
        b.set(3, 0, Cell("▀", foreground: .rgb(1, 2, 3)))
        let out = String(decoding: encoder.encode(previous: nil, next: b), as: UTF8.self)
        #expect(out.contains("\u{1B}[0;7mab"))
        #expect(!out.contains("38;2"))
    }
}
