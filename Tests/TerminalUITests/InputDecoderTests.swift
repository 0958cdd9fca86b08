import Testing
@testable import TerminalUI

@Suite struct InputDecoderTests {
    static func keys(_ s: String, split: Int? = nil) -> [InputEvent] {
        var d = InputDecoder()
        let bytes = Array(s.utf8)
        guard let split else { return d.feed(bytes) + d.flush() }
        var out: [InputEvent] = []
        var i = 0
        while i < bytes.count { out += d.feed(bytes[i..<min(bytes.count, i + split)]); i += split }
        return out + d.flush()
    }

    static let table: [(String, Key)] = [
        ("\u{1B}[A", .up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
        ("\u{1B}OA", .up), ("\u{1B}OB", .down), ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}[1~", .home), ("\u{1B}[4~", .end),
        ("\u{1B}[5~", .pageUp), ("\u{1B}[6~", .pageDown), ("\u{1B}[2~", .insert), ("\u{1B}[3~", .delete),
        ("\u{1B}OP", .function(1)), ("\u{1B}[15~", .function(5)), ("\u{1B}[24~", .function(12)),
        ("\r", .enter), ("\t", .tab), ("\u{7F}", .backspace), ("\u{1B}[Z", .backTab),
        ("q", .character("q")), ("[", .character("[")), ("é", .character("é")), ("漢", .character("漢")),
        ("\u{03}", .control("c")), ("\u{1A}", .control("z"))
    ]

    @Test(arguments: 0..<table.count)
    func everyKeyWholeAndSplitByteByByte(_ i: Int) {
        let (text, key) = Self.table[i]
        for split in [nil, 1, 2] as [Int?] {
            let events = Self.keys(text, split: split)
            #expect(events.count == 1, "\(text.debugDescription) split \(split ?? 0)")
            guard case .key(let press)? = events.first else { Issue.record("no key for \(text.debugDescription)"); continue }
            #expect(press.key == key)
        }
    }

    @Test func aLoneEscapeWaitsThenIsTheEscapeKey() {
        var d = InputDecoder()
        #expect(d.feed([0x1B]).isEmpty)
        #expect(d.hasPending)
        #expect(d.flush() == [.key(KeyPress(.escape))])
        // The same ESC followed in time by "[A" is an arrow, not Esc + "[" + "A".
        #expect(d.feed([0x1B]).isEmpty)
        #expect(d.feed(Array("[A".utf8)) == [.key(KeyPress(.up))])
    }

    @Test func modifiersAltAndBurstsOfKeys() {
        #expect(Self.keys("\u{1B}[1;5A") == [.key(KeyPress(.up, ctrl: true))])
        #expect(Self.keys("\u{1B}[1;2B") == [.key(KeyPress(.down, shift: true))])
        #expect(Self.keys("\u{1B}x") == [.key(KeyPress(.character("x"), alt: true))])
        #expect(
            Self.keys("jjk\u{1B}[Bq") == [
                .key(KeyPress(.character("j"))), .key(KeyPress(.character("j"))),
                .key(KeyPress(.character("k"))), .key(KeyPress(.down)), .key(KeyPress(.character("q")))
            ])
    }

    @Test func bracketedPasteArrivesWholeEvenWhenSplit() {
        let text = "\u{1B}[200~make=Toyota\u{1B}[Bnot a key\u{1B}[201~j"
        for split in [nil, 1, 3, 7] as [Int?] {
            #expect(Self.keys(text, split: split) == [.paste("make=Toyota\u{1B}[Bnot a key"), .key(KeyPress(.character("j")))])
        }
    }

    @Test func sgrMouseReports() {
        #expect(Self.keys("\u{1B}[<0;10;5M") == [.mouse(MouseEvent(button: .left, x: 9, y: 4, isRelease: false))])
        #expect(Self.keys("\u{1B}[<64;1;1M") == [.mouse(MouseEvent(button: .wheelUp, x: 0, y: 0, isRelease: false))])
        #expect(Self.keys("\u{1B}[<0;3;3m") == [.mouse(MouseEvent(button: .left, x: 2, y: 2, isRelease: true))])
    }

    @Test func utf8SplitAcrossReads() {
        var d = InputDecoder()
        let bytes = Array("😀".utf8)
        #expect(d.feed(bytes[0..<2]).isEmpty)
        #expect(d.feed(bytes[2...]) == [.key(KeyPress(.character("😀")))])
    }
}
