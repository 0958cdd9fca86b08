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
        "\"a\u{01}\"", "nul", "[" + String(repeating: "[", count: 600) + String(repeating: "]", count: 601)
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

/// `JSONValue.canonicalize` (straight from text) must give exactly the tree path's bytes and
/// reject exactly what the parser rejects: stored documents and their digests depend on it.
@Suite struct JSONCanonicalizerTests {
    /// Canonical bytes via the tree, or nil when the parser rejects the text.
    static func viaTree(_ text: [UInt8]) -> [UInt8]? { (try? JSONValue(parsing: text))?.canonicalBytes }
    static func direct(_ text: [UInt8]) -> [UInt8]? { try? JSONValue.canonicalize(text) }

    @Test(arguments: [
        #" { "b" : [1, 2.5e3, -0, true, null], "a": "x\"\u00e9\ud83d\ude00\n" } "#,
        #"{"z":1,"a":{"y":[{"b":2,"a":1},{}],"x":"\u0001\t\\\/"},"m":[]}"#,
        #"{"k":1,"k":2,"a":0,"k":3}"#, #"{"b":1,"a":2,"b":{"d":1,"c":2}}"#,
        #"{"\u00e9":1,"e":2,"é":3,"\ud83d\ude00":4,"":5}"#, #"["\u0000","\u001f",1e-7,-0.5E+3]"#,
        "\u{FEFF}{\"bom\":true}", "  \"just a string\"  ", "123", "[[[[]]]]", "{}"
    ])
    func matchesTheTreePath(text: String) throws {
        let bytes = Array(text.utf8)
        let tree = try #require(Self.viaTree(bytes))
        #expect(try JSONValue.canonicalize(bytes) == tree)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc", "\"\\x\"", "\"\\ud800\"", "[1] 2", "{\"a\" 1}",
        "\"a\u{01}\"", "nul", "[" + String(repeating: "[", count: 600) + String(repeating: "]", count: 601), "{1:2}", "[1 2]"
    ])
    func rejectsWhatTheParserRejects(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.canonicalize(Array(text.utf8)) }
        #expect(throws: JSONParseError.self) { try JSONValue.validate(Array(text.utf8)) }
    }

    static func valid(_ text: [UInt8]) -> Bool { (try? JSONValue.validate(text)) != nil }

    @Test func invalidUTF8IsRejected() {
        for bad: [UInt8] in [[0xC3, 0x28], [0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80], [0xFF]] {
            #expect(Self.direct([0x22] + bad + [0x22]) == nil)
            #expect(Self.direct(Array(#"{"k":"a\n"#.utf8) + bad + [0x22, 0x7D]) == nil)
            #expect(Self.direct(Array(#"{""#.utf8) + bad + Array(#"":1}"#.utf8)) == nil)
            #expect(!Self.valid(Array(#"[1,""#.utf8) + bad + Array(#"\t"]"#.utf8)))
        }
    }

    /// Keys are compared by their bytes (RFC 8259), so "é" and "e\u{301}" are two members; the tree
    /// (Swift `String` keys, compared by canonical equivalence) would merge them.
    @Test func keysDifferingOnlyInNormalizationStayApart() throws {
        let text = Array(#"{"e\u0301":1,"\u00e9":2}"#.utf8)
        #expect(try JSONValue.canonicalize(text) == Array("{\"e\u{301}\":1,\"é\":2}".utf8))
    }

    /// Random documents written with shuffled keys, duplicates, escapes and whitespace, then
    /// mutated byte by byte: both paths agree on every input, accepted or not.
    @Test func agreesOnRandomAndMutatedText() {
        var rng = SplitMix64(seed: 2026)
        // No two keys that are canonically equivalent Unicode but different bytes (see below).
        let keys = ["a", "b", "ab", "é", "\\\"q", "\\ud83d\\ude00", "", "Z", "a\\nb"]
        let scalars = ["null", "true", "false", "0", "-1.5e3", "12345678901234567890", "\"x\"", "\"\\u00e9\\t\"", "\"日本\"", "\"\\/\""]
        func ws() -> String { ["", " ", "\n\t", "  "].randomElement(using: &rng)! }
        func random(_ depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 3 ? 1 : 3), using: &rng) {
            case 0: return scalars.randomElement(using: &rng)!
            case 1: return "[" + (0..<Int.random(in: 0..<4, using: &rng)).map { _ in ws() + random(depth + 1) + ws() }.joined(separator: ",") + "]"
            default:
                return "{"
                    + (0..<Int.random(in: 0..<5, using: &rng)).map { _ in
                        ws() + "\"" + keys.randomElement(using: &rng)! + "\"" + ws() + ":" + ws() + random(depth + 1)
                    }.joined(separator: ",") + ws() + "}"
            }
        }
        var accepted = 0, rejected = 0
        for _ in 0..<3_000 {
            let text = Array(random(0).utf8)
            #expect(Self.direct(text) == Self.viaTree(text))
            #expect(Self.valid(text))
            for _ in 0..<5 {
                var m = text
                guard !m.isEmpty else { continue }
                let at = Int(rng.next() % UInt64(m.count))
                switch rng.next() % 3 {
                case 0: m[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: m.remove(at: at)
                default: m.insert(Array("{}[],:\"\\ 0e-".utf8).randomElement(using: &rng)!, at: at)
                }
                let (d, t) = (Self.direct(m), Self.viaTree(m))
                #expect(d == t, "\(String(decoding: m, as: UTF8.self))")
                #expect(Self.valid(m) == (t != nil))
                if t == nil { rejected += 1 } else { accepted += 1 }
            }
        }
        #expect(accepted > 1_000 && rejected > 1_000)
    }

    /// Objects wider than the insertion-sort cutoff (16 members), with duplicate and escaped keys,
    /// and long strings whose quote, backslash, control or non-ASCII byte falls at every offset of
    /// the 8-byte scan: both paths agree, and one changed byte is judged alike.
    @Test func agreesOnWideObjectsAndLongStrings() {
        var rng = SplitMix64(seed: 77)
        let specials = ["\\\"", "\\\\", "\\n", "\\u0001", "é", "日", "😀", "\\/"]
        for width in [15, 16, 17, 40, 300] {
            for _ in 0..<20 {
                let members = (0..<width).map { _ -> String in
                    var key = "k\(rng.next() % UInt64(width / 2 + 1))"
                    if rng.next() % 5 == 0 { key += specials[Int(rng.next() % UInt64(specials.count))] }
                    let pad = String(repeating: "x", count: Int(rng.next() % 20))
                    let at = Int(rng.next() % UInt64(pad.count + 1))
                    let text =
                        String(pad.prefix(at)) + (rng.next() % 2 == 0 ? specials[Int(rng.next() % UInt64(specials.count))] : "") + String(pad.dropFirst(at))
                    return "\"\(key)\":\"\(text)\""
                }
                let text = Array(("{" + members.joined(separator: ",") + "}").utf8)
                #expect(Self.direct(text) == Self.viaTree(text), "\(String(decoding: text, as: UTF8.self))")
                var m = text
                m[Int(rng.next() % UInt64(m.count))] = [0x22, 0x5C, 0x01, 0x7F, 0xC3, 0x20][Int(rng.next() % 6)]
                #expect(Self.direct(m) == Self.viaTree(m), "\(String(decoding: m, as: UTF8.self))")
            }
        }
    }

    /// Long texts with several escapes (HTML with line breaks and quoted attributes): the runs
    /// between escapes are copied sixteen bytes at a time, on the way in and on the way out.
    @Test func agreesOnLongTextsWithManyEscapes() {
        var rng = SplitMix64(seed: 78)
        let specials = ["\\\"", "\\\\", "\\n", "\\u0001", "\\u00e9", "é", "日", "😀", "\\/", "\\t", "\\ud83d\\ude00"]
        for _ in 0..<300 {
            var text = ""
            for _ in 0..<Int(rng.next() % 12) {
                text += String(repeating: "<p a=b>", count: Int(rng.next() % 9)) + String(repeating: "x", count: Int(rng.next() % 17))
                text += specials[Int(rng.next() % UInt64(specials.count))]
            }
            let doc = Array("{\"t\":\"\(text)\",\"k\\n\(text.prefix(40))\":[\"\(text)\"]}".utf8)
            #expect(Self.direct(doc) == Self.viaTree(doc), "\(String(decoding: doc, as: UTF8.self))")
            var m = doc
            m[Int(rng.next() % UInt64(m.count))] = [0x22, 0x5C, 0x01, 0x7F, 0xC3, 0x20][Int(rng.next() % 6)]
            #expect(Self.direct(m) == Self.viaTree(m), "\(String(decoding: m, as: UTF8.self))")
        }
    }

    /// The canonicalizer scans strings 16 bytes at a time and copies short texts in 16-byte moves
    /// while the input and output have room: a quote, backslash, control or non-ASCII byte at
    /// every offset, in keys and values, with the string ending the text or followed by more.
    @Test func specialBytesAtEveryOffsetAndNearTheEnd() {
        let specials = ["\\\"", "\\\\", "\\n", "\\u0001", "\\u00e9", "é", "日", "😀", "\\/", "\u{7F}"]
        for offset in 0..<48 {
            let pad = String(repeating: "x", count: offset)
            for special in specials {
                for text in [
                    "\"\(pad)\(special)\(pad)\"", "[\"\(pad)\(special)\"]", "{\"\(pad)\(special)\":0,\"a\":1}",
                    "{\"b\":\"\(special)\(pad)\",\"a\":\"\(pad)\"}", "{\"z\":1,\"\(pad)\":[\"\(special)\"]}" + String(repeating: " ", count: offset % 17)
                ] {
                    let bytes = Array(text.utf8)
                    let tree = Self.viaTree(bytes)
                    #expect(tree != nil, "\(text)")
                    #expect(Self.direct(bytes) == tree, "\(text)")
                    for cut in [1, 2] where bytes.count > cut {
                        #expect(Self.direct(Array(bytes.dropLast(cut))) == Self.viaTree(Array(bytes.dropLast(cut))), "\(text) less \(cut)")
                    }
                }
            }
        }
    }

    /// Well-formed UTF-8 at the edges of each sequence length is kept; overlongs, surrogates,
    /// values past U+10FFFF and sequences cut short are rejected, in keys and in values.
    @Test func utf8EdgesAreJudgedAsTheParserJudgesThem() throws {
        let good: [[UInt8]] = [
            [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
            [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF]
        ]
        let bad: [[UInt8]] = [
            [0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xF0, 0x8F, 0xBF, 0xBF],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3]
        ]
        for (sequences, accepted) in [(good, true), (bad, false)] {
            for seq in sequences {
                for text in [
                    [0x22] + seq + [0x22], Array(#"{""#.utf8) + seq + Array(#"":1,"a":2}"#.utf8),
                    Array(#"["\n"#.utf8) + seq + Array(#"x"]"#.utf8), Array(#"{"\u0062"#.utf8) + seq + Array(#"":1,"a":2}"#.utf8)
                ] {
                    #expect((Self.direct(text) != nil) == accepted, "\(seq)")
                    #expect(Self.direct(text) == Self.viaTree(text), "\(seq)")
                }
            }
        }
    }

    @Test func nestingIsLimitedTo512Levels() throws {
        for (open, close) in [("[", "]"), (#"{"a":"#, "}")] {
            let at512 = Array((String(repeating: open, count: 512) + "0" + String(repeating: close, count: 512)).utf8)
            let at513 = Array((String(repeating: open, count: 513) + "0" + String(repeating: close, count: 513)).utf8)
            #expect(Self.direct(at512) != nil)
            #expect(Self.direct(at512) == Self.viaTree(at512))
            #expect(throws: JSONParseError.self) { try JSONValue.canonicalize(at513) }
        }
    }

    /// A document of several MiB (its work buffers grow past what a thread keeps, and are dropped
    /// after it), then small ones again, on many threads at once: every result as the tree's.
    @Test func largeDocumentsAndManyThreads() async throws {
        var rng = SplitMix64(seed: 9)
        let members = (0..<60_000).map { i -> String in
            let key = rng.next() % 7 == 0 ? "k\\u00e9\(rng.next() % 40_000)" : "k\(rng.next() % 40_000)"
            return "\"\(key)\":{\"v\":\(i),\"s\":\"\(String(repeating: "y", count: Int(rng.next() % 60)))\",\"a\":[\(i),{\"z\":1,\"b\":2}]}"
        }
        let big = Array(("{" + members.joined(separator: ", ") + "}").utf8)
        #expect(big.count > 2 << 20)
        let small = Array(#"{"z":[1,{"y":2,"x":"\u00e9"}],"a":null}"#.utf8)
        let expected = (try #require(Self.viaTree(big)), try #require(Self.viaTree(small)))
        let results = await withTaskGroup(of: Bool.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var ok = true
                    for round in 0..<(t == 0 ? 3 : 200) {
                        if t == 0 || round % 50 == 0 { ok = ok && Self.direct(big) == expected.0 }
                        ok = ok && Self.direct(small) == expected.1
                    }
                    return ok
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
