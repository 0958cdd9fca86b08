@testable import EventStore
import Foundation
import LMDB
import Testing

/// Pretty-printed JSON bodies are stored minified with their layout (codec 5) and read back
/// byte for byte; anything else is stored as it is.
@Suite struct JSONLayoutTests {
    /// A JSON value, printed as the scrapers print it.
    indirect enum Value {
        case number(Int)
        case text(String)
        case list([Value])
        case object([(String, Value)])

        /// `json.dumps(indent=)`, `jq .` and `JSON.stringify(v, null, n)`'s layout.
        func pretty(_ unit: String = "  ", _ level: Int = 0) -> String {
            let inner = String(repeating: unit, count: level + 1), outer = String(repeating: unit, count: level)
            switch self {
            case .number(let n): return String(n)
            case .text(let s): return Self.quoted(s)
            case .list(let l):
                return l.isEmpty ? "[]" : "[\n" + l.map { inner + $0.pretty(unit, level + 1) }.joined(separator: ",\n") + "\n" + outer + "]"
            case .object(let o):
                return o.isEmpty
                    ? "{}" : "{\n" + o.map { inner + Self.quoted($0.0) + ": " + $0.1.pretty(unit, level + 1) }.joined(separator: ",\n") + "\n" + outer + "}"
            }
        }

        var compact: String {
            switch self {
            case .number(let n): return String(n)
            case .text(let s): return Self.quoted(s)
            case .list(let l): return "[" + l.map(\.compact).joined(separator: ",") + "]"
            case .object(let o): return "{" + o.map { Self.quoted($0.0) + ":" + $0.1.compact }.joined(separator: ",") + "}"
            }
        }

        static func quoted(_ s: String) -> String {
            "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
                + "\""
        }

        static func random(_ rng: inout SplitMix64, depth: Int = 0) -> Value {
            let texts = ["", " ", "a b", "  two  spaces ", "tab\there", "quote \" and \\ back", "new\nline", "{[,:]}", "é ünï 💡", "\\\"", "x"]
            switch depth > 3 ? rng.next() % 2 : rng.next() % 4 {
            case 0: return .number(Int(rng.next() % 2000) - 1000)
            case 1: return .text(texts[Int(rng.next() % UInt64(texts.count))])
            case 2: return .list((0..<Int(rng.next() % 4)).map { _ in random(&rng, depth: depth + 1) })
            default: return .object((0..<Int(rng.next() % 4)).map { k in ("k\(k) \(texts[Int(rng.next() % 3)])", random(&rng, depth: depth + 1)) })
            }
        }
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// Version `v` of a list of 120 items: a few change a field each version.
    static func version(_ v: Int) -> Value {
        .list(
            (0..<120).map { i in
                .object([
                    ("id", .number(i)), ("name", .text("item \(i) with a name")), ("stock", .number((i * 7 + (v + i % 5) / 5) % 97)),
                    ("tags", .list(i % 3 == 0 ? [] : [.text("t\(i % 4)"), .text("sale")])), ("meta", .object(i % 4 == 0 ? [] : [("v", .number(v / 3))]))
                ])
            })
    }

    @Test func theScrapersLayoutsComeBackByteForByte() throws {
        var rng = SplitMix64(seed: 11)
        var cases = 0
        for n in 0..<400 {
            let value: Value = .object([("items", .list((0..<Int(rng.next() % 5)).map { _ in Value.random(&rng) })), ("n", .number(n))])
            for unit in ["  ", "    ", " ", "\t"] {
                for final in ["", "\n"] {
                    let body = Self.bytes(value.pretty(unit) + final)
                    let m = try #require(JSONLayout.minified(body), "\(value.pretty(unit))")
                    #expect(m.form == Self.bytes(value.compact))
                    #expect(try m.form.withUnsafeBytes { try JSONLayout.expand($0, layout: m.layout, size: body.count) } == body)
                    cases += 1
                }
            }
        }
        #expect(cases == 3_200)
    }

    /// Anything that would not come back exactly is left as it is: minified already, CRLF lines,
    /// a space before a colon (Foundation's pretty printing), a blank line, a trailing space, an
    /// empty list printed open, not JSON at all.
    @Test func otherTextsAreNotMinified() {
        let pretty = Self.version(1).pretty()
        let others = [
            Self.version(1).compact,
            pretty.replacingOccurrences(of: "\n", with: "\r\n"),
            pretty.replacingOccurrences(of: "\": ", with: "\" : "),
            pretty.replacingOccurrences(of: ",\n", with: ",\n\n"),
            pretty + " ",
            pretty + "\n\n",
            "[\n  ]",
            "{\n  \"a\": [\n  ]\n}",
            "{\n  function f() { return 1 }\n}",
            "[\n" + String(repeating: " ", count: 16) + "1\n]",
            "[\n  1,\n    2\n]",
            "[\n"
        ]
        for text in others { #expect(JSONLayout.minified(Self.bytes(text)) == nil, "\(text.prefix(40))") }
        #expect(JSONLayout.minified(Self.bytes(pretty)) != nil)
        // A body too large to lay out again within a read's bound is left as it is.
        let large = Value.list((0..<4_000).map { i in .object([("id", .number(i)), ("text", .text(String(repeating: "x", count: 90)))]) }).pretty()
        #expect(large.utf8.count > JSONLayout.largest && JSONLayout.minified(Self.bytes(large)) == nil)
    }

    /// Whatever a text is, when it is minified the layout gives it back exactly: pretty texts
    /// with bytes inserted, deleted or changed at random.
    @Test func anyTextMinifiedComesBackExactly() throws {
        var rng = SplitMix64(seed: 17)
        let alphabet = Array("{}[],:\"\\ \n\t\ra1".utf8)
        var minified = 0
        for n in 0..<4_000 {
            let value: Value = .list((0..<Int(rng.next() % 4)).map { _ in Value.random(&rng) })
            var text = Self.bytes(value.pretty(n % 2 == 0 ? "  " : "\t") + (n % 3 == 0 ? "\n" : ""))
            for _ in 0..<Int(rng.next() % 3) {
                let at = Int(rng.next() % UInt64(text.count))
                switch rng.next() % 3 {
                case 0: text.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                case 1: if at >= 2 { text.remove(at: at) }
                default: if at >= 2 { text[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))] }
                }
            }
            guard let m = JSONLayout.minified(text) else { continue }
            minified += 1
            let back = try? m.form.withUnsafeBytes { try JSONLayout.expand($0, layout: m.layout, size: text.count) }
            #expect(
                back == text,
                "\(String(decoding: text, as: UTF8.self).debugDescription) form \(String(decoding: m.form, as: UTF8.self).debugDescription) layout \(m.layout)")
        }
        #expect(minified > 1_000)
    }

    /// A damaged form or size is an error, never a trap, whatever the bytes.
    @Test func aDamagedFormIsAnError() {
        var rng = SplitMix64(seed: 3)
        let alphabet = Array("{}[],:\"\\ a1\n".utf8)
        var failures = 0
        for _ in 0..<3_000 {
            let form = (0..<Int(rng.next() % 40)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            let size = Int(rng.next() % 120)
            let layout = UInt8(truncatingIfNeeded: rng.next())
            do {
                let out = try form.withUnsafeBytes { try JSONLayout.expand($0, layout: layout, size: size) }
                #expect(out.count == size)
            } catch {
                failures += 1
            }
        }
        #expect(failures > 2_000)
        let body = Self.bytes(Self.version(2).pretty())
        let m = JSONLayout.minified(body)!
        for size in [0, body.count - 1, body.count + 1, body.count * 2] {
            #expect(throws: (any Error).self) { try m.form.withUnsafeBytes { try JSONLayout.expand($0, layout: m.layout, size: size) } }
        }
        #expect(throws: (any Error).self) { try m.form.withUnsafeBytes { try JSONLayout.expand($0, layout: m.layout ^ 1, size: body.count) } }
    }

    static func rows(_ store: EventStore) throws -> [UInt64: [UInt8]] { try DeltaChainTests.bodyRows(store) }

    static func event(_ id: String, _ body: [UInt8], url: String = "http://api.test/items") -> NewEvent {
        NewEvent(id: id, type: "CollectionPageFetched", stream: "src", metadata: [("url", url)], payload: body)
    }

    /// A URL's pretty-printed versions: codec 5 rows, deltas between minified forms inside them,
    /// every version back byte for byte, smaller than the same versions with CRLF lines (which
    /// stay as they are), `verify` clean; in an encrypted store too.
    @Test(arguments: [false, true])
    func prettyVersionsChainAsMinifiedForms(encrypted: Bool) async throws {
        var options = DeltaChainTests.options(keyframeInterval: 8)
        if encrypted { options.key = StoreKey.generate() }
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: options)
        let crlf = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 8))
        let versions = (0..<20).map { Self.bytes(Self.version($0).pretty() + "\n") }
        for (v, body) in versions.enumerated() {
            _ = try await store.append(Self.event("p\(v)", body))
            let windows = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
            _ = try await crlf.append(Self.event("p\(v)", windows))
        }
        let rows = try Self.rows(store)
        #expect(rows.count == 20)
        #expect(rows.values.allSatisfy { $0.first == BlobCodec.laidOut })
        let deltas = try rows.values.filter { row in try row.withUnsafeBytes { try BlobCodec.inner($0).first == BlobCodec.delta } }
        #expect(deltas.count >= 17)
        #expect(try Self.rows(crlf).values.allSatisfy { $0.first != BlobCodec.laidOut })
        for e in try await store.events(EventQuery()) {
            #expect(try await store.payload(of: e) == versions[Int(e.id.dropFirst())!], "\(e.id)")
        }
        let (laidOut, plain) = (try await store.stats().blobStoredBytes, try await crlf.stats().blobStoredBytes)
        #expect(laidOut * 10 < plain * 9, "\(laidOut) bytes minified, \(plain) as they are")
        #expect(try await store.verify().ok)
    }

    /// One URL's versions in every form at once: pretty (two widths), minified, CRLF, not JSON,
    /// repeated ones. A batch stores the rows that one event at a time stores, and all read back.
    @Test func mixedFormsInOneChainReadBack() async throws {
        let forms: [[UInt8]] = (0..<24).map { v in
            let value = Self.version(v % 10)
            switch v % 6 {
            case 0: return Self.bytes(value.pretty())
            case 1: return Self.bytes(value.pretty("    ") + "\n")
            case 2: return Self.bytes(value.compact)
            case 3: return Self.bytes(value.pretty().replacingOccurrences(of: "\n", with: "\r\n"))
            case 4: return Self.bytes("not json " + value.pretty())
            default: return Self.bytes(value.pretty("\t"))
            }
        }
        let order = Array(0..<24) + [0, 5, 1]
        let batched = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 6))
        _ = try await batched.append(order.enumerated().map { Self.event("m\($0.offset)", forms[$0.element]) })
        let single = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 6))
        for (k, v) in order.enumerated() { _ = try await single.append(Self.event("m\(k)", forms[v])) }
        let (a, b) = (try Self.rows(batched), try Self.rows(single))
        #expect(a == b)
        #expect(a.values.contains { $0.first == BlobCodec.laidOut } && a.values.contains { $0.first != BlobCodec.laidOut })
        for store in [batched, single] {
            for e in try await store.events(EventQuery()) {
                let k = Int(e.id.dropFirst())!
                #expect(try await store.payload(of: e) == forms[order[k]], "\(e.id)")
            }
            #expect(try await store.verify().ok)
        }
    }

    /// A version whose base is a row an older strata stored whole, with the layout in it: the
    /// same body fetched again (stored once, so the lineage still ends at the older row) and a
    /// new version after it in one batch. The delta worked out ahead was made against the
    /// minified form; the writer must not use it against a base stored as it is.
    @Test func aBaseStoredWholeByAnOlderVersionIsNotTakenForItsForm() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 8))
        let (a, b) = (Self.bytes(Self.version(0).pretty()), Self.bytes(Self.version(1).pretty()))
        _ = try await store.append(Self.event("a", a))
        let (env, bodies) = (store.environment, store.schema.bodies)
        try env.write { txn in
            _ = try txn.put(bodies, key: UInt64(1).bigEndianBytes, value: ZstdContext.pooled { BlobCodec.encode(a, context: $0) })
        }
        _ = try await store.append([Self.event("a again", a), Self.event("b", b)])
        let events = try await store.events(EventQuery())
        #expect(events.count == 3)
        #expect(try await store.payload(of: events[2]) == b)
        let row = try #require(try Self.rows(store)[3])
        #expect(row.first == BlobCodec.laidOut)
        #expect(try row.withUnsafeBytes { try DeltaHeader($0, checkSeal: true).base } == 1)
        #expect(try await store.verify().ok)
    }

    /// A rewrite (retention, forget) of a pretty-printed version stores the rows above it again;
    /// every version reads back and the chain goes on.
    @Test func aRewriteInAChainOfMinifiedFormsReadsBack() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 8))
        let versions = (0..<6).map { Self.bytes(Self.version($0).pretty()) }
        for v in 0..<4 { _ = try await store.append(Self.event("v\(v)", versions[v])) }
        let by = try await store.append(NewEvent(type: "Dropped", stream: "src")).seq
        let erased = Self.bytes(Value.object([("erased", .list([]))]).pretty())
        #expect(try await store.rewriteBodies([BodyRewrite(original: Hashing.sha256(versions[1]), content: erased)], by: by) == 1)
        for v in 4..<6 { _ = try await store.append(Self.event("v\(v)", versions[v])) }
        for e in try await store.events(EventQuery()) where e.type == "CollectionPageFetched" {
            let v = Int(e.id.dropFirst())!
            #expect(try await store.payload(of: e) == (v == 1 ? erased : versions[v]), "version \(v)")
        }
        #expect(try Self.rows(store).values.allSatisfy { $0.first == BlobCodec.laidOut })
    }
}
