import EventStore
import Foundation
import StrataApp
import StrataDomain
import StrataJSON
import StrataTestSupport
import TestScratch
import Testing

/// The expression language against an oracle written here: a generated history (numbers,
/// strings, nulls, absent fields and arrays changing over many versions, items coming and going)
/// imported into two sources, one with indexes and one without, and every answer compared with
/// what this file's own evaluator says of the snapshots: `list` through an index and through a
/// scan, now and as of every pass; `count --by`; `changes --when`.
@Suite struct ExpressionOracleTests {
    /// A small deterministic generator, so a failure names a seed that reproduces it.
    typealias Rng = SplitMix64

    static let words = ["red", "blue", "green", "Teal"]

    /// One item's document: `n` a number, null or absent; `s` a word, null or absent; `tags` a list
    /// of words; `obj.x` a number.
    static func document(_ id: Int, _ rng: inout Rng) -> [String: Any] {
        var d: [String: Any] = ["id": id, "tags": (0..<rng.below(3)).map { _ in rng.pick(words) }, "obj": ["x": rng.below(20)]]
        switch rng.below(10) {
        case 0: d["n"] = NSNull()
        case 1: break
        default: d["n"] = rng.below(50)
        }
        switch rng.below(10) {
        case 0: d["s"] = NSNull()
        case 1: break
        default: d["s"] = rng.pick(words)
        }
        return d
    }

    /// Snapshots of a list of up to 30 items over `passes` passes: each pass changes some items,
    /// drops some and brings some (back).
    static func history(seed: UInt64, passes: Int) -> [[Int: [String: Any]]] {
        var rng = Rng(seed: seed)
        var current: [Int: [String: Any]] = [:]
        for id in 1...20 { current[id] = document(id, &rng) }
        var out = [current]
        for _ in 1..<passes {
            for id in Array(current.keys) where rng.chance(30) { current[id] = document(id, &rng) }
            for id in Array(current.keys) where rng.chance(5) { current[id] = nil }
            for id in 1...30 where current[id] == nil && rng.chance(8) { current[id] = document(id, &rng) }
            out.append(current)
        }
        return out
    }

    // MARK: The oracle's evaluator

    /// The atoms of the generated expressions, with their text and their meaning.
    struct Atom {
        var text: String
        var holds: (_ new: [String: Any]?, _ old: [String: Any]?) -> Bool
    }

    static func number(_ v: Any?) -> Int? { (v as? NSNumber).map(\.intValue) }

    static func atoms(_ rng: inout Rng, changes: Bool) -> Atom {
        let k = rng.below(50), w = rng.pick(words), w2 = rng.pick(words)
        let ops = ["<", "<=", ">", ">=", "=", "!="]
        func cmp(_ op: String, _ a: Int, _ b: Int) -> Bool {
            switch op {
            case "<": a < b
            case "<=": a <= b
            case ">": a > b
            case ">=": a >= b
            case "=": a == b
            default: a != b
            }
        }
        var choices: [Atom] = [
            {
                let op = rng.pick(ops);
                return Atom(text: "n \(op) \(k)") { new, _ in
                    guard let n = number(new?["n"]) else { return op == "!=" }
                    return cmp(op, n, k)
                }
            }(),
            Atom(text: "s = \"\(w)\"") { new, _ in (new?["s"] as? String) == w },
            Atom(text: "s != \"\(w)\"") { new, _ in (new?["s"] as? String) != w },
            Atom(text: "n in (\(k), \(k + 1), \(k + 7))") { new, _ in number(new?["n"]).map { [k, k + 1, k + 7].contains($0) } ?? false },
            Atom(text: "s in (\"\(w)\", \"\(w2)\")") { new, _ in (new?["s"] as? String).map { [w, w2].contains($0) } ?? false },
            Atom(text: "n = null") { new, _ in number(new?["n"]) == nil },
            Atom(text: "s = null") { new, _ in !(new?["s"] is String) },
            Atom(text: "tags = \"\(w)\"") { new, _ in ((new?["tags"] as? [String]) ?? []).contains(w) },
            Atom(text: "obj.x >= \(k % 20)") { new, _ in (number((new?["obj"] as? [String: Any])?["x"]) ?? -1) >= k % 20 },
            Atom(text: "n >= \(k) and n < \(k + 10)") { new, _ in number(new?["n"]).map { $0 >= k && $0 < k + 10 } ?? false }
        ]
        if changes {
            choices += [
                Atom(text: "n > old.n") { new, old in
                    guard let a = number(new?["n"]), let b = number(old?["n"]) else { return false }
                    return a > b
                },
                Atom(text: "s != old.s") { new, old in
                    let a = new?["s"] as? String, b = old?["s"] as? String
                    return a != b
                },
                Atom(text: "old.n = null") { _, old in number(old?["n"]) == nil }
            ]
        }
        return rng.pick(choices)
    }

    /// An expression of one to three atoms joined by and, or and not.
    static func expression(_ rng: inout Rng, changes: Bool = false) -> Atom {
        var e = atoms(&rng, changes: changes)
        for _ in 0..<rng.below(3) {
            let other = atoms(&rng, changes: changes)
            switch rng.below(3) {
            case 0: e = Atom(text: "(\(e.text)) and (\(other.text))") { [e] in e.holds($0, $1) && other.holds($0, $1) }
            case 1: e = Atom(text: "(\(e.text)) or (\(other.text))") { [e] in e.holds($0, $1) || other.holds($0, $1) }
            default: e = Atom(text: "not (\(other.text))") { !other.holds($0, $1) }
            }
        }
        return e
    }

    // MARK: The store

    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    /// Both sources with the history imported, pass by pass; the seq of each pass per source.
    /// `backfilled`: a third, `late`, gets the same passes, then an empty snapshot dated before
    /// them all: backfilled, so its changes are put in observed order from each item's history,
    /// and the same as the others' (the early snapshot removes nothing that was there).
    static func store(_ history: [[Int: [String: Any]]], backfilled: Bool = false, encrypted: Bool = false) async throws -> (
        StrataApp, passes: [String: [UInt64]]
    ) {
        let store = try await makeStore(key: encrypted ? StoreKey.generate() : nil)
        let app = StrataApp(store: store, configuration: AppConfiguration(userAgent: "Strata/test", logger: quietLogger()))
        let dir = TestScratch.directory("strata-expr")
        var specIndexed = SourceSpec(name: "indexed", url: "file://\(dir)/list.json", id: ["id"], index: ["n", "s", "tags", "obj.x"])
        specIndexed.isRecorded = false
        _ = try await app.useCases.manageSources.define(specIndexed)
        _ = try await app.useCases.manageSources.define(SourceSpec(name: "plain", url: "file://\(dir)/list.json", id: ["id"]))
        if backfilled { _ = try await app.useCases.manageSources.define(SourceSpec(name: "late", url: "file://\(dir)/list.json", id: ["id"])) }
        var passes: [String: [UInt64]] = [:]
        for (i, snapshot) in history.enumerated() {
            let file = "\(dir)/pass-\(i).json"
            let list = snapshot.keys.sorted().map { snapshot[$0]! }
            try JSONSerialization.data(withJSONObject: list, options: [.sortedKeys]).write(to: URL(fileURLWithPath: file))
            for source in ["indexed", "plain"] {
                _ = try await app.useCases.importHistory(source, from: .files([file], observedAt: t0.addingTimeInterval(Double(i) * 3600)))
                passes[source, default: []].append(try await app.useCases.replay.resolve(.now))
            }
        }
        if backfilled {
            for i in history.indices {
                _ = try await app.useCases.importHistory("late", from: .files(["\(dir)/pass-\(i).json"], observedAt: t0.addingTimeInterval(Double(i) * 3600)))
            }
            try Data("[]".utf8).write(to: URL(fileURLWithPath: "\(dir)/early.json"))
            _ = try await app.useCases.importHistory("late", from: .files(["\(dir)/early.json"], observedAt: t0.addingTimeInterval(-3600)))
        }
        return (app, passes)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func listAndCountAnswerAsTheOracleDoesThroughIndexesAndScans(seed: UInt64) async throws {
        let history = Self.history(seed: seed, passes: 12)
        let (app, passes) = try await Self.store(history)
        var rng = Rng(seed: seed &* 31)
        for _ in 0..<40 {
            let e = Self.expression(&rng)
            let parsed = try ItemExpression(parsing: e.text)
            // Now, and as of a few passes.
            for pass in [history.count - 1, rng.below(history.count), rng.below(history.count)] {
                let expected = history[pass].filter { e.holds($0.value, nil) }.keys.map(String.init).sorted()
                var answers: [String: [String]] = [:]
                for source in ["indexed", "plain"] {
                    var q = ItemQuery(source: source, at: pass == history.count - 1 ? .now : .seq(passes[source]![pass]))
                    q.expressions = [parsed]
                    answers[source] = try await app.useCases.query(q).page.items.map(\.id).sorted()
                }
                #expect(answers["indexed"] == expected, "seed \(seed), pass \(pass), indexed: \(e.text)")
                #expect(answers["plain"] == expected, "seed \(seed), pass \(pass), scanned: \(e.text)")
                // count --by s: the oracle's grouping of the same items.
                var q = ItemQuery(source: "indexed", at: .seq(passes["indexed"]![pass]))
                q.expressions = [parsed]
                let counts = try await app.useCases.query.count(q, by: ["s"]).counts
                var grouped: [String: Int] = [:]
                for (_, d) in history[pass] where e.holds(d, nil) {
                    let key = (d["s"] as? String).map { "\"\($0)\"" } ?? (d["s"] is NSNull ? "null" : "(none)")
                    grouped[key, default: 0] += 1
                }
                let got = Dictionary(uniqueKeysWithValues: counts.map { ($0.values[0].map(\.canonicalString) ?? "(none)", $0.count) })
                #expect(got == grouped, "seed \(seed), pass \(pass), count --by s: \(e.text)")
            }
        }
    }

    /// `count --by` an indexed field with nothing else: the value index's counters, checked
    /// against the scan of the same source without an index and against the oracle.
    @Test(arguments: [UInt64(6), 7])
    func facetsFromTheIndexAnswerAsTheScanAndTheOracle(seed: UInt64) async throws {
        let history = Self.history(seed: seed, passes: 6)
        let (app, _) = try await Self.store(history)
        for path in ["s", "tags", "n"] {
            let indexed = try await app.useCases.query.count(ItemQuery(source: "indexed"), by: [path])
            let scanned = try await app.useCases.query.count(ItemQuery(source: "plain"), by: [path])
            #expect(indexed.usedIndex && !scanned.usedIndex)
            #expect(indexed.counts == scanned.counts, "seed \(seed), --by \(path)")
            var oracle: [String: Int] = [:]
            for (_, d) in history.last! {
                let values: [String]
                switch d[path] {
                case let list as [String]: values = Array(Set(list.map { "\"\($0)\"" }))
                case is NSNull: values = ["null"]
                case let n as NSNumber: values = [n.stringValue]
                case let t as String: values = ["\"\(t)\""]
                default: values = []
                }
                for v in values.isEmpty ? ["(none)"] : values { oracle[v, default: 0] += 1 }
            }
            let got = Dictionary(uniqueKeysWithValues: indexed.counts.map { ($0.values[0].map(\.canonicalString) ?? "(none)", $0.count) })
            #expect(got == oracle, "seed \(seed), --by \(path)")
        }
    }

    /// Seed 5 in an encrypted store: the change order holds the ids' digests, read back to ids.
    @Test(arguments: [(UInt64(4), false), (5, true)])
    func changesWhenAnswersAsTheOraclesComparisons(seed: UInt64, encrypted: Bool) async throws {
        let history = Self.history(seed: seed, passes: 10)
        let (app, passes) = try await Self.store(history, backfilled: true, encrypted: encrypted)
        var rng = Rng(seed: seed &* 17)
        // The oracle: each pass's snapshot against the one before, item by item, in the order the
        // answer streams in: pass by pass, and within a pass by id, the removals last (a pass's
        // page is one event, the sweep that removes what it lacks the next).
        func expected(_ e: Atom, after first: Int = -1) -> [String] {
            var out: [String] = []
            for pass in history.indices where pass > first {
                let before = pass == 0 ? [:] : history[pass - 1]
                let removedLast = { (id: Int) in (history[pass][id] == nil ? 1 : 0, id) }
                for id in Set(before.keys).union(history[pass].keys).sorted(by: { removedLast($0) < removedLast($1) }) {
                    let (old, new) = (before[id], history[pass][id])
                    guard !Self.same(old, new) else { continue }
                    if e.holds(new, old) { out.append("\(id)@\(pass)") }
                }
            }
            return out
        }
        for round in 0..<25 {
            let e = Self.expression(&rng, changes: true)
            var filter = ReadChanges.Filter()
            filter.when = [try ItemExpression(parsing: e.text)]
            let from = round % 3 == 2 ? rng.below(history.count) : nil
            // `plain` walks the log's change order; `late`, observed in another order than the
            // log's, each item's history (from the start: its passes are not in seq order).
            for (source, after) in [("plain", from), ("late", nil)] {
                let got = try await app.useCases.changes(source: source, from: after.map { .seq(passes["plain"]![$0]) }, filter: filter)
                    .changes.map { c in "\(c.item)@\(Int(c.observedAt.timeIntervalSince(Self.t0) / 3600))" }
                #expect(got == expected(e, after: after ?? -1), "seed \(seed), \(source), after pass \(after ?? -1): \(e.text)")
            }
            // A limit is the answer's first changes, however early the walk stops.
            filter.limit = 3
            let first = try await app.useCases.changes(source: "plain", from: nil, filter: filter).changes.map { c in
                "\(c.item)@\(Int(c.observedAt.timeIntervalSince(Self.t0) / 3600))"
            }
            #expect(first == Array(expected(e).prefix(3)), "seed \(seed), limit 3: \(e.text)")
        }
    }

    static func same(_ a: [String: Any]?, _ b: [String: Any]?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let x?, let y?):
            (try? JSONSerialization.data(withJSONObject: x, options: [.sortedKeys])) == (try? JSONSerialization.data(withJSONObject: y, options: [.sortedKeys]))
        default: false
        }
    }
}
