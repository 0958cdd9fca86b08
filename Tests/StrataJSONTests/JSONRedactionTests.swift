import StrataJSON
import Testing

/// ``JSONRedaction``: the values at the paths, and only they, are cut out of the text; every
/// other byte stays; what is not JSON is refused.
@Suite struct JSONRedactionTests {
    /// Marks each value with its path and text, so the test sees what the placeholder was given.
    func run(_ text: String, _ paths: [String], _ scope: JSONRedaction.Scope) throws -> String? {
        try JSONRedaction(paths: paths).redact(Array(text.utf8), scope: scope) { path, value in
            if case .string(let s) = value { return "<\(path)=\(s)>" }
            return "<\(path)=\(String(decoding: value.canonicalBytes, as: UTF8.self))>"
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func listItemsAreRedactedAndEveryOtherByteStays() throws {
        let text = #"{ "count" : 2, "email": "top", "results": [ {"id":1, "email" : "a@x.io",  "n": {"phone": 5}}, {"email": null, "z": [1, 2]} ] }"#
        let out = try run(text, ["email", "n.phone"], .items(at: ["results"]))
        #expect(
            out
                == #"{ "count" : 2, "email": "top", "results": [ {"id":1, "email" : "<email=a@x.io>",  "n": {"phone": "<n.phone=5>"}}, {"email": "<email=null>", "z": [1, 2]} ] }"#
        )
    }

    @Test func arraysInsideAnItemAreWalkedThrough() throws {
        let out = try run(#"{"phones":[{"number":"1"},{"number":"2"},{"other":3}]}"#, ["phones.number"], .document)
        #expect(out == #"{"phones":[{"number":"<phones.number=1>"},{"number":"<phones.number=2>"},{"other":3}]}"#)
    }

    @Test func aWholeObjectOrArrayBecomesOnePlaceholder() throws {
        let out = try run(#"{"contact":{"b":2,"a":[1,"x"]},"keep":true}"#, ["contact"], .document)
        #expect(out == #"{"contact":"<contact={\"a\":[1,\"x\"],\"b\":2}>","keep":true}"#)
    }

    @Test func aMapKeyedByIdAndABodyThatIsTheList() throws {
        #expect(try run(#"{"k1":{"pw":"s"},"k2":{"pw":"t"}}"#, ["pw"], .items(at: [])) == #"{"k1":{"pw":"<pw=s>"},"k2":{"pw":"<pw=t>"}}"#)
        #expect(try run(#"[{"pw":"s"}]"#, ["pw"], .items(at: [])) == #"[{"pw":"<pw=s>"}]"#)
        #expect(try run(#"{"data":{"items":[{"pw":"s"}]}}"#, ["pw"], .items(at: ["data", "items"])) == #"{"data":{"items":[{"pw":"<pw=s>"}]}}"#)
    }

    @Test func escapedKeysAndValuesAreReadAsJSON() throws {
        let out = try run(#"{"e\u006dail":"a\"b\\c\u00e9","x":"\"}"}"#, ["email"], .document)
        #expect(out == #"{"e\u006dail":"<email=a\"b\\cé>","x":"\"}"}"#)
    }

    @Test func nothingFoundLeavesTheTextAsItCame() throws {
        #expect(try run(#"{"a":1}"#, ["b"], .document) == nil)
        #expect(try run(#"{"results":{"a":1}}"#, ["a"], .items(at: ["other"])) == nil)
        // A placeholder the caller keeps (an import of what was redacted before) is not redacted again.
        let kept = try JSONRedaction(paths: ["a"]).redact(
            Array(#"{"a":"[redacted:0123456789ab]"}"#.utf8), scope: .document, keep: { $0.hasPrefix("[redacted:") }
        ) { _, _ in "again" }
        #expect(kept == nil)
    }

    @Test func whatIsNotJSONIsRefused() {
        for bad in [#"{"a":"#, #"{"a":1}x"#, "", "{\"a\":\"\u{01}\"}", String(repeating: "[", count: 600) + String(repeating: "]", count: 600)] {
            #expect(throws: JSONParseError.self, "\(bad.prefix(20)) (\(bad.count) bytes)") { _ = try run(bad, ["a"], .document) }
        }
    }

    @Test func randomDocumentsRedactToWhatATreeWalkFinds() throws {
        var rng = SplitMix(seed: 54)
        for _ in 0..<300 {
            let doc = randomValue(&rng, depth: 0)
            let text = doc.canonicalBytes
            let paths = ["a", "b.c", "c"]
            let out = try JSONRedaction(paths: paths).redact(text, scope: .document) { _, _ in "R" }
            let expected = replaced(doc, path: [], paths: Set(paths.map { $0.split(separator: ".").map(String.init) }))
            #expect(try JSONValue(parsing: out ?? text) == expected)
        }
    }

    private func replaced(_ v: JSONValue, path: [String], paths: Set<[String]>) -> JSONValue {
        switch v {
        case .object(let o):
            var out: [String: JSONValue] = [:]
            for (k, x) in o { out[k] = paths.contains(path + [k]) ? .string("R") : replaced(x, path: path + [k], paths: paths) }
            return .object(out)
        case .array(let a): return .array(a.map { replaced($0, path: path, paths: paths) })
        default: return v
        }
    }

    private func randomValue(_ rng: inout SplitMix, depth: Int) -> JSONValue {
        switch rng.next() % (depth > 3 ? 3 : 6) {
        case 0: return .string(["a", "b", "c", "x\"y"][Int(rng.next() % 4)])
        case 1: return .number(String(rng.next() % 100))
        case 2: return .null
        case 3, 4:
            var o: [String: JSONValue] = [:]
            for _ in 0..<(rng.next() % 4) { o[["a", "b", "c", "d"][Int(rng.next() % 4)]] = randomValue(&rng, depth: depth + 1) }
            return .object(o)
        default: return .array((0..<(rng.next() % 3)).map { _ in randomValue(&rng, depth: depth + 1) })
        }
    }

    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
