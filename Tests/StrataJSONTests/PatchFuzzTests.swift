import EventStore
import Foundation
import StrataJSON
import Testing

/// Seeded property tests: random documents and random patches (valid, and mutated into every
/// class of bad pointer and operation) applied by Strata and by a small reference applier
/// written from RFC 6902's text for this test. Both must agree on the result or on failing;
/// nothing may trap. `STRATA_PATCH_FUZZ_ITERATIONS` sets the scale (`make stress`: 1,000,000),
/// `STRATA_FUZZ_SEED` the seed; a disagreement prints both, with the seed and case.
@Suite struct PatchFuzzTests {
    static var iterations: Int { Int(ProcessInfo.processInfo.environment["STRATA_PATCH_FUZZ_ITERATIONS"] ?? "") ?? 5_000 }
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"] ?? "") ?? 6902 }

    @Test func strataAgreesWithTheReferenceApplier() throws {
        var rng = FuzzRNG(seed: Self.seed)
        var applied = 0, refused = 0
        for i in 0..<Self.iterations {
            let doc = rng.document(depth: 3)
            let patch = rng.patch(for: doc)
            let ours: JSONValue? = try? doc.applying(patchDocument: patch)
            let theirs = ReferencePatch.apply(patch, to: doc)
            let agree =
                switch (ours, theirs) {
                case (nil, nil): true
                case (let a?, let b?): a == b
                default: false
                }
            #expect(
                agree,
                "seed \(Self.seed) case \(i): doc \(doc.canonicalString) patch \(patch.canonicalString) → strata \(ours?.canonicalString ?? "error"), reference \(theirs?.canonicalString ?? "error")"
            )
            if !agree { return }
            if ours == nil { refused += 1 } else { applied += 1 }
        }
        // Both classes must be exercised, or the generator has drifted.
        #expect(applied > Self.iterations / 5 && refused > Self.iterations / 5, "applied \(applied), refused \(refused)")
        print("patch fuzz: seed \(Self.seed), \(Self.iterations) patches, \(applied) applied, \(refused) refused, agreeing with the reference")
    }

    @Test func diffsApplyBackToTheirTarget() throws {
        var rng = FuzzRNG(seed: Self.seed &+ 1)
        for i in 0..<Self.iterations / 5 {
            let a = rng.document(depth: 3), b = rng.document(depth: 3)
            let ops = a.diff(to: b)
            #expect(try a.applying(ops) == b, "seed \(Self.seed &+ 1) case \(i)")
            let wire = JSONValue.array(ops.map(\.wire))
            #expect(try a.applying(patchDocument: wire) == b, "seed \(Self.seed &+ 1) case \(i) as a patch document")
        }
    }
}

/// RFC 6902 applied the plainest way: pointers split by hand, documents rebuilt functionally.
/// Written separately from `StrataJSON` so the two can disagree.
enum ReferencePatch {
    static func apply(_ patch: JSONValue, to doc: JSONValue) -> JSONValue? {
        guard case .array(let ops) = patch else { return nil }
        var d = doc
        for op in ops {
            guard let next = step(op, d) else { return nil }
            d = next
        }
        return d
    }

    static func step(_ raw: JSONValue, _ doc: JSONValue) -> JSONValue? {
        guard case .object(let o) = raw, case .string(let op)? = o["op"], case .string(let path)? = o["path"], let p = parse(path) else { return nil }
        switch op {
        case "add": return o["value"].flatMap { add(doc, p, $0) }
        case "remove": return remove(doc, p)
        case "replace":
            guard let v = o["value"], get(doc, p) != nil else { return nil }
            return p.isEmpty ? v : remove(doc, p).flatMap { add($0, p, v) }
        case "test":
            guard let v = o["value"], let have = get(doc, p) else { return nil }
            return equal(have, v) ? doc : nil
        case "move", "copy":
            guard case .string(let f)? = o["from"], let from = parse(f), let v = get(doc, from) else { return nil }
            if op == "copy" { return add(doc, p, v) }
            if from == p { return doc }
            if p.count > from.count, Array(p.prefix(from.count)) == from { return nil }
            return remove(doc, from).flatMap { add($0, p, v) }
        default: return nil
        }
    }

    static func parse(_ s: String) -> [String]? {
        if s.isEmpty { return [] }
        guard s.first == "/" else { return nil }
        var out: [String] = []
        for part in s.dropFirst().components(separatedBy: "/") {
            var t = "", chars = Array(part), i = 0
            while i < chars.count {
                if chars[i] == "~" {
                    guard i + 1 < chars.count, chars[i + 1] == "0" || chars[i + 1] == "1" else { return nil }
                    t.append(chars[i + 1] == "0" ? "~" : "/")
                    i += 2
                } else {
                    t.append(chars[i])
                    i += 1
                }
            }
            out.append(t)
        }
        return out
    }

    static func index(_ t: String, _ count: Int, end: Bool) -> Int? {
        if t == "-" { return end ? count : nil }
        guard !t.isEmpty, t.allSatisfy({ ("0"..."9").contains($0) }), t == "0" || !t.hasPrefix("0"), t.count < 19, let i = Int(t) else { return nil }
        return i < count || (end && i == count) ? i : nil
    }

    static func get(_ d: JSONValue, _ p: [String]) -> JSONValue? {
        guard let h = p.first else { return d }
        switch d {
        case .object(let o): return o[h].flatMap { get($0, Array(p.dropFirst())) }
        case .array(let a): return index(h, a.count, end: false).flatMap { get(a[$0], Array(p.dropFirst())) }
        default: return nil
        }
    }

    static func add(_ d: JSONValue, _ p: [String], _ v: JSONValue) -> JSONValue? {
        guard let h = p.first else { return v }
        let rest = Array(p.dropFirst())
        switch d {
        case .object(var o):
            if rest.isEmpty {
                o[h] = v
            } else {
                guard let c = o[h], let n = add(c, rest, v) else { return nil }
                o[h] = n
            }
            return .object(o)
        case .array(var a):
            if rest.isEmpty {
                guard let i = index(h, a.count, end: true) else { return nil }
                a.insert(v, at: i)
            } else {
                guard let i = index(h, a.count, end: false), let n = add(a[i], rest, v) else { return nil }
                a[i] = n
            }
            return .array(a)
        default: return nil
        }
    }

    static func remove(_ d: JSONValue, _ p: [String]) -> JSONValue? {
        guard let h = p.first else { return nil }
        let rest = Array(p.dropFirst())
        switch d {
        case .object(var o):
            guard let c = o[h] else { return nil }
            if rest.isEmpty {
                o[h] = nil
            } else {
                guard let n = remove(c, rest) else { return nil }
                o[h] = n
            }
            return .object(o)
        case .array(var a):
            guard let i = index(h, a.count, end: false) else { return nil }
            if rest.isEmpty {
                a.remove(at: i)
            } else {
                guard let n = remove(a[i], rest) else { return nil }
                a[i] = n
            }
            return .array(a)
        default: return nil
        }
    }

    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return Decimal(string: x) == Decimal(string: y)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(equal)
        case (.object(let x), .object(let y)): return Set(x.keys) == Set(y.keys) && x.allSatisfy { equal($0.value, y[$0.key]!) }
        default: return a == b
        }
    }
}

typealias FuzzRNG = SplitMix64

/// Generators of documents, pointers and patches.
extension SplitMix64 {
    static let keys = ["a", "b", "", "~", "/", "a/b", "m~n", "0", "-", "10"]
    static let numbers = ["0", "1", "-1", "1.0", "1e0", "10E-1", "2", "0.5", "12345678901234567890"]

    mutating func scalar() -> JSONValue {
        switch below(5) {
        case 0: .null
        case 1: .bool(chance(50))
        case 2: .number(pick(Self.numbers))
        case 3: .string(pick(["x", "y", "", "1"]))
        default: .string(pick(Self.keys))
        }
    }

    mutating func document(depth: Int) -> JSONValue {
        guard depth > 0, chance(70) else { return scalar() }
        if chance(50) {
            var o: [String: JSONValue] = [:]
            for _ in 0..<below(4) { o[pick(Self.keys)] = document(depth: depth - 1) }
            return .object(o)
        }
        return .array((0..<below(4)).map { _ in document(depth: depth - 1) })
    }

    /// Pointers that exist in `doc` (found by walking it), then mutated now and then.
    mutating func pointer(in doc: JSONValue) -> String {
        var tokens: [String] = [], current = doc
        while chance(75) {
            switch current {
            case .object(let o) where !o.isEmpty:
                let k = o.keys.sorted()[below(o.count)]
                tokens.append(k)
                current = o[k]!
            case .array(let a) where !a.isEmpty:
                let i = below(a.count)
                tokens.append(String(i))
                current = a[i]
            default:
                break
            }
            if case .object(let o) = current, o.isEmpty { break }
            if case .array(let a) = current, a.isEmpty { break }
            if !(current.isContainer) { break }
        }
        if chance(30) { tokens.append(pick(["-", "0", "1", "-1", "01", "1e3", "+1", "99999999999999999999999", "new", "", "~"])) }
        if chance(10), !tokens.isEmpty { tokens[below(tokens.count)] = pick(["-1", "00", "x", "3", " 1"]) }
        var text = tokens.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
        if chance(3) { text = pick(["a", "/a~2", "/~", "#/a"]) }
        return text
    }

    mutating func patch(for doc: JSONValue) -> JSONValue {
        var ops: [JSONValue] = []
        for _ in 0..<below(4) {
            let op = pick(["add", "remove", "replace", "move", "copy", "test", "add", "replace"])
            var o: [String: JSONValue] = ["op": .string(op), "path": .string(pointer(in: doc))]
            if ["add", "replace", "test"].contains(op) {
                o["value"] = op == "test" && chance(60) ? (JSONValue.value(atPointerIn: doc, o["path"]!) ?? scalar()) : document(depth: 2)
            }
            if ["move", "copy"].contains(op) { o["from"] = .string(pointer(in: doc)) }
            if chance(5) { o.removeValue(forKey: pick(["op", "path", "value", "from"])) }
            if chance(5) { o["op"] = pick([.string("frob"), .number("1"), .null]) }
            if chance(5) { o["extra"] = scalar() }
            ops.append(chance(2) ? scalar() : .object(o))
        }
        return .array(ops)
    }
}

extension JSONValue {
    var isContainer: Bool {
        switch self {
        case .object, .array: true
        default: false
        }
    }

    static func value(atPointerIn doc: JSONValue, _ path: JSONValue) -> JSONValue? {
        guard case .string(let p) = path else { return nil }
        return doc.value(atPointer: p)
    }
}
