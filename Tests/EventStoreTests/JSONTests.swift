import EventStore
import Testing

@Suite struct JSONTests {
    @Test func parsesAndWritesCanonicalJSON() throws {
        let v = try JSONValue(parsing: #" { "b" : [1, 2.5e3, -0, true, null], "a": "x\"\u00e9\ud83d\ude00\n" } "#)
        #expect(v.canonicalString == #"{"a":"x\"é😀\n","b":[1,2.5e3,-0,true,null]}"#)
        #expect(try JSONValue(parsing: v.canonicalBytes) == v)
        #expect(v.value(atPath: "b.1") == .number("2.5e3"))
        #expect(v.value(atPath: "b.9") == nil)
        #expect(v.value(atPath: "a")?.displayText == "x\"é😀\n")
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "\"\\x\"", "\"\\ud800\"", "[1] 2", "{\"a\" 1}",
        "\"a\u{01}\"", "nul", "[" + String(repeating: "[", count: 600) + String(repeating: "]", count: 601),
    ])
    func rejectsMalformedJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [34, 0xFF, 0xFE, 34]) }
    }

    @Test func diffThenApplyReproducesTheTarget() throws {
        var rng = SplitMix64(seed: 42)
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 2 ? 4 : 6), using: &rng) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &rng))
            case 2: return .number(String(Int.random(in: 0..<5, using: &rng)))
            case 3: return .string(["a", "b/c", "~d"].randomElement(using: &rng)!)
            case 4: return .array((0..<Int.random(in: 0..<4, using: &rng)).map { _ in random(depth + 1) })
            default:
                var o: [String: JSONValue] = [:]
                for _ in 0..<Int.random(in: 0..<4, using: &rng) { o[["x", "y", "z/w", "~"].randomElement(using: &rng)!] = random(depth + 1) }
                return .object(o)
            }
        }
        for _ in 0..<2_000 {
            let a = random(0), b = random(0)
            let ops = a.diff(to: b)
            #expect(try a.applying(ops) == b)
            if a == b { #expect(ops.isEmpty) }
            for op in ops where op.op != .add { #expect(op.old != nil) }
        }
    }
}

@Suite struct JSONUTF8Tests {
    /// Invalid UTF-8 inside strings is rejected, whether or not a decoder's repair would keep the
    /// length (a cut 4-byte sequence becomes one 3-byte U+FFFD); valid text round-trips exactly.
    @Test(arguments: [[0xC3, 0x28], [0xF0, 0x9F, 0x98], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xFF], [0x80], [0xF0, 0x9F, 0x98, 0x78]] as [[UInt8]])
    func invalidUTF8IsRejected(bad: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22] + bad + [0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: Array(#"{"k":"a\n"#.utf8) + bad + [0x22, 0x7D]) }
    }

    @Test func validTextRoundTrips() throws {
        for text in ["Škoda Mégane", "«très bon état»", "日本語", "emoji 😀 and 🇧🇪", "plain"] {
            let v = try JSONValue(parsing: Array("\"\(text)\"".utf8))
            #expect(v == .string(text))
            #expect(try JSONValue(parsing: Array("\"a\\n\(text)\"".utf8)) == .string("a\n" + text))
        }
    }
}
