import EventStore
import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import StrataJSON
import Testing

/// Seeded generated input through every parser a user reaches below the CLI: `--set`/`--unset`
/// assignments and edit lines applied to items, `--where`/`--sort`/`--limit`/`--offset`/`--as-of`
/// queries run against a real store, source definitions, JSON Pointers and dotted paths. Each
/// must answer with a result or a clean error (never a trap), and the store must verify after.
/// `STRATA_INPUT_FUZZ_ITERATIONS` sets the scale (`make stress`: 1,000,000), `STRATA_FUZZ_SEED`
/// the seed; a failure names both.
@Suite struct InputFuzzTests {
    static var iterations: Int { Int(ProcessInfo.processInfo.environment["STRATA_INPUT_FUZZ_ITERATIONS"] ?? "") ?? 5_000 }
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["STRATA_FUZZ_SEED"] ?? "") ?? 50 }

    /// Paths as people type them, and as they go wrong.
    static let paths = [
        "make", "price", "pros", "pros.0", "pros.1", "pros.-1", "pros.01", "pros.99999999999999999999", "seller.city", "a..b", ".", "",
        "~0", "/price", "/pros/-", "/pros/-1", "/pros/1e3", "detail:x", "ñ", "\u{0}", "make.x.y", "id", "rating", "labels.name"
    ]
    static let values = ["Toyota", "", "12", "-1", "1e999", "null", "[1,2]", "{\"a\":1}", "\"q\"", "true", "\u{1B}[2J", "x=y", "=", ";"]
    static let points = [
        "0", "1", "17", "18446744073709551615", "99999999999999999999", "-1", "2026-01-02", "2026-01-02T00:00:00Z", "1969-12-31",
        "9999-12-31T23:59:59Z", "2026-13-45", "now", "", " 3 ", "1e3"
    ]

    typealias RNG = SplitMix64

    @Test func parsersNeverTrap() async throws {
        let (repos, ends) = try await carsStore()
        var rng = RNG(seed: Self.seed)
        let items = try await repos.items.items(ItemQuery(source: "cars")).items
        var answered = 0, refused = 0
        for i in 0..<Self.iterations {
            let context = "seed \(Self.seed) case \(i)"
            switch rng.below(5) {
            case 0:
                // --set / --unset, and the browser's edit line, applied to a stored item.
                var edit = ItemEdit()
                do {
                    for _ in 0..<rng.below(3) { edit.sets.append(try ItemEdit.assignment(rng.text(Self.paths) + "=" + rng.text(Self.values))) }
                    for _ in 0..<rng.below(2) { edit.unsets.append(rng.text(Self.paths)) }
                    if rng.chance(20) { edit = try ItemEdit.line(rng.text(Self.paths) + "=" + rng.text(Self.values) + ";" + "-" + rng.text(Self.paths)) }
                    _ = try edit.applied(to: rng.pick(items).document)
                    answered += 1
                } catch let e as RepositoryError {
                    #expect(!e.message.isEmpty, "\(context)")
                    refused += 1
                }
            case 1, 2:
                // A query as `list` builds it, run against the store.
                var wheres: [String] = []
                for _ in 0..<rng.below(3) { wheres.append(rng.text(Self.paths) + (rng.chance(90) ? "=" : "") + rng.text(Self.values)) }
                let sort = rng.chance(40) ? (rng.chance(30) ? "-" : "") + rng.text(Self.paths) : nil
                let limit: Int? = rng.chance(50) ? nil : rng.pick([0, 1, 3, -1, Int.max])
                let offset = rng.pick([0, 0, 2, -5, 1_000_000, Int.max])
                let asOf: String? = rng.chance(50) ? nil : rng.chance(50) ? String(rng.pick(ends)) : rng.text(Self.points)
                let search = rng.chance(20) ? rng.text(Self.values) : nil
                do {
                    var query = ItemQuery(source: rng.chance(95) ? "cars" : rng.text(Self.values), search: search, limit: limit, offset: max(0, offset))
                    for w in wheres {
                        guard let eq = w.firstIndex(of: "=") else { throw RepositoryError(.invalidQuery, "no =") }
                        query.filters.append(FieldFilter(path: String(w[..<eq]), value: String(w[w.index(after: eq)...])))
                    }
                    if let sort { query.sort = sort.hasPrefix("-") ? ItemSort(path: String(sort.dropFirst()), descending: true) : ItemSort(path: sort) }
                    // An expression made of the grammar's pieces in any order: it parses or is
                    // refused with a position, and what parses runs as a filter and a count.
                    if rng.chance(50) {
                        let pieces = [
                            "price", "make", "tags", "old.price", "<", ">=", "=", "!=", "~", "in", "(", ")", ",", "*", "/", "-", "+", "and", "or",
                            "not", "contains", "null", "true", "1", "2.5", "1e400", "NaN", "\"Kia\"", "'x", "\u{0}", "((((("
                        ]
                        let text = (0..<rng.below(9)).map { _ in rng.pick(pieces) }.joined(separator: rng.chance(70) ? " " : "")
                        do {
                            query.expressions.append(try ItemExpression(parsing: text))
                            _ = try await repos.items.count(query, by: rng.chance(50) ? [rng.text(Self.paths)] : [])
                        } catch let e as ExpressionError {
                            #expect(e.position >= 1 && !e.message.isEmpty, "\(context): \(text)")
                        }
                    }
                    if let asOf { query.at = UInt64(asOf).map(PointInTime.seq) ?? .date(Date(timeIntervalSince1970: Double(rng.below(2_000_000_000)))) }
                    let page = try await repos.items.items(query)
                    #expect(page.items.count <= page.total, "\(context)")
                    answered += 1
                } catch let e as RepositoryError {
                    #expect(!e.message.isEmpty, "\(context)")
                    refused += 1
                }
            case 3:
                // A source definition as `source add` builds it.
                var d = SourceDefinition(
                    name: rng.text(["cars", "", "a/b", "x"]),
                    url: rng.text(["http://127.0.0.1:1/x", "ftp://x", "", "http://", "file:///tmp", "http://[::1]:99999/"]),
                    items: rng.chance(50) ? rng.text(Self.paths) : nil, id: [rng.text(Self.paths)])
                if rng.chance(30) { d.pageParam = rng.text(["page", "", "a&b"]); d.pageSize = rng.pick([0, 1, 10, -3, 10_001, Int.max]) }
                if rng.chance(30) {
                    d.headers = [rng.text(["Authorization: Bearer $T", "Authorization: Bearer abc", "X: y", ": v", "NoColon", "Cookie: ${file:/nope}"])]
                }
                if rng.chance(20) { d.cursorPath = rng.text(Self.paths); d.cursorParam = rng.chance(50) ? rng.text(["cursor", ""]) : nil }
                do {
                    try SourceSpec(d).validateForDefinition(keepingLiteralSecrets: false)
                    _ = try? d.resolvedHeaders(environment: [:])
                    answered += 1
                } catch {
                    #expect(!"\(error)".isEmpty, "\(context)")
                    refused += 1
                }
            default:
                // Pointers and dotted paths over stored documents.
                let doc = rng.pick(items).document
                let text = rng.text(Self.paths)
                _ = doc.values(atPath: text)
                _ = doc.pathReachesArray(text)
                _ = doc.value(atPath: text)
                if let p = try? JSONPointer(text) { _ = doc.value(at: p) } else { refused += 1 }
                answered += 1
            }
        }
        #expect(answered > Self.iterations / 4 && refused > Self.iterations / 20, "answered \(answered), refused \(refused)")
        let report = try await repos.store.verify()
        #expect(report.ok, "the store verifies after \(Self.iterations) inputs")
        print("input fuzz: seed \(Self.seed), \(Self.iterations) inputs, \(answered) answered, \(refused) refused cleanly")
    }
}

extension SplitMix64 {
    /// A string from the pools, sometimes cut, doubled or given stray bytes.
    mutating func text(_ pool: [String]) -> String {
        var s = pick(pool)
        if chance(10) { s += pick(pool) }
        if chance(5), !s.isEmpty { s = String(s.prefix(below(s.count))) }
        if chance(5) { s += pick(["\u{FFFD}", "\u{1F600}", "'", "\"", "\\", "%", "\n"]) }
        return s
    }
}
