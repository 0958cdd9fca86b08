import EventStore
import Foundation
import StrataData
import Testing

/// Seeded mutation fuzzing of the response path (JSON parsing, item and id extraction, diffing):
/// every mutated body either yields items or a `FetchError`; nothing traps.
@Suite struct ResponseFuzzTests {
    static let seeds: [(file: String, extraction: ItemExtraction)] = [
        ("cars/v1/offers.json", ItemExtraction(itemsPath: "results", idPaths: ["id"])),
        ("catalog/v2/entries.json", ItemExtraction(itemsPath: nil, idPaths: ["id"])),
        ("notes/v1/notes.json", ItemExtraction(itemsPath: nil, idPaths: ["@key"])),
        ("pokedex/v1/pokemon.json", ItemExtraction(itemsPath: "results", idPaths: ["name"])),
        ("cars/v3/offers.json", ItemExtraction(itemsPath: "results", idPaths: ["make", "id"]))
    ]

    @Test func mutatedBodiesNeverCrashTheResponsePath() throws {
        let iterations = Int(ProcessInfo.processInfo.environment["STRATA_FUZZ_ITERATIONS"] ?? "") ?? 5_000
        var rng = SplitMix64(seed: 20_261_122)
        let bodies = try Self.seeds.map { seed -> [UInt8] in
            // Compact the seed so mutations hit structure rather than indentation.
            let v = try JSONValue(parsing: [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixturesRoot + "/" + seed.file))))
            return Array(v.canonicalBytes.prefix(6_000))
        }
        let structural = Array("{}[]\",:0-.e\\u tfn".utf8)
        var accepted = 0, rejected = 0
        for _ in 0..<iterations {
            let pick = Int(rng.next() % UInt64(bodies.count))
            var b = bodies[pick]
            for _ in 0..<(1 + Int(rng.next() % 4)) where !b.isEmpty {
                let i = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 7 {
                case 0: b[i] ^= UInt8(1 << (rng.next() % 8))
                case 1: b.insert(structural[Int(rng.next() % UInt64(structural.count))], at: i)
                case 2: b.removeSubrange(i..<min(b.count, i + 1 + Int(rng.next() % 16)))
                case 3: b = Array(b.prefix(i))
                case 4: b.insert(contentsOf: b[i..<min(b.count, i + Int(rng.next() % 64))], at: i)
                case 5: b[i] = UInt8(truncatingIfNeeded: rng.next())
                default: b.insert(contentsOf: [0xE2, 0x82], at: i)  // a cut multi-byte sequence
                }
            }
            let extraction = Self.seeds[pick].extraction
            // The folds' and the import's tree-less reading answers exactly as the tree does.
            let scanned = Self.outcome {
                try extraction.canonicalItems(in: b, url: "fuzz://\(pick)").map { "\($0.key)=\(String(decoding: $0.canonical, as: UTF8.self))" }
            }
            let tree = Self.outcome { try extraction.items(in: b, url: "fuzz://\(pick)").items.map { "\($0.key)=\($0.item.canonicalString)" } }
            #expect(scanned == tree)
            do {
                let (_, items) = try extraction.items(in: b, url: "fuzz://\(pick)")
                accepted += 1
                // Whatever parsed must diff and patch back consistently.
                if let first = items.first, let last = items.last {
                    let ops = first.item.diff(to: last.item)
                    #expect(try first.item.applying(ops) == last.item)
                }
            } catch is FetchError {
                rejected += 1
            }
        }
        #expect(accepted + rejected == iterations)
        #expect(accepted > 0 && rejected > 0)
    }

    /// An answer or the error's code and message, comparable.
    static func outcome(_ body: () throws -> [String]) -> Result<[String], Failure> {
        do { return .success(try body()) } catch let e as FetchError { return .failure(Failure(text: "\(e.code) \(e.message)")) } catch {
            return .failure(Failure(text: "\(error)"))
        }
    }

    struct Failure: Error, Equatable { var text: String }

    /// Pages with what the fixtures lack: duplicate keys (an items array given twice, an id given
    /// twice), non-ASCII and escaped text, composite and nested ids, numbers as ids, object maps,
    /// missing and empty ids. The tree-less reading answers as the tree does, item for item.
    @Test func theTreeLessReadingOfAPageAnswersAsTheTree() {
        var rng = SplitMix64(seed: 20_261_128)
        func pick<T>(_ a: [T]) -> T { rng.pick(a) }
        let texts = [#""a""#, #""é\u00e9\n""#, #""\ud83d\ude00 ok""#, "\"\u{1F600}\"", "12", "-0.5e3", "true", "null", "\"\""]
        func scalar() -> String { pick(texts) }
        func value(_ depth: Int) -> String {
            switch rng.next() % (depth > 2 ? 2 : 4) {
            case 0, 1: return scalar()
            case 2: return "{" + (0..<Int(rng.next() % 3)).map { _ in "\"\(pick(["x", "y", "é", "id"]))\": \(value(depth + 1))" }.joined(separator: ",") + "}"
            default: return "[" + (0..<Int(rng.next() % 3)).map { _ in value(depth + 1) }.joined(separator: ", ") + "]"
            }
        }
        var serial = 0
        func item() -> String {
            var members: [String] = []
            for _ in 0..<Int(rng.next() % 4) { members.append("\"\(pick(["name", "x", "meta"]))\":\(value(1))") }
            serial += 1
            let id =
                rng.next() % 4 == 0
                ? pick([#""a1""#, "7", "7.0", #""""#, "null", #""é""#, #"{"id":"n1"}"#, #"{"id":3}"#]) : rng.next() % 2 == 0 ? "\"é\(serial)\"" : "\(serial)"
            if rng.next() % 8 != 0 { members.insert("\"id\":\(id)", at: Int(rng.next() % UInt64(members.count + 1))) }
            if rng.next() % 10 == 0 { members.append("\"id\":\(pick([#""dup""#, "8"]))") }
            if rng.next() % 3 == 0 { members.append("\"meta\":{\"id\":\(pick([#""m1""#, #""m2""#, "5"]))}") }
            return "{" + members.joined(separator: pick([",", " ,\n "])) + "}"
        }
        let extractions = [
            ItemExtraction(itemsPath: "items", idPaths: ["id"]), ItemExtraction(itemsPath: "data.items", idPaths: ["id"]),
            ItemExtraction(itemsPath: nil, idPaths: ["id"]), ItemExtraction(itemsPath: "items", idPaths: ["meta.id"]),
            ItemExtraction(itemsPath: "items", idPaths: ["name", "id"]), ItemExtraction(itemsPath: "items", idPaths: ["@key"]),
            ItemExtraction(itemsPath: "items.0", idPaths: ["id"])
        ]
        var accepted = 0
        for round in 0..<3_000 {
            let extraction = extractions[round % extractions.count]
            let list = "[" + (0..<Int(rng.next() % 5)).map { _ in item() }.joined(separator: ",") + "]"
            let map =
                "{" + (0..<Int(rng.next() % 4)).map { _ in "\(pick([#""k1""#, #""k2""#, #""é""#, #""e\u0301""#])):\(item())" }.joined(separator: ",") + "}"
            let items = rng.next() % 4 == 0 ? map : list
            var page: String
            switch extraction.itemsPath {
            case nil: page = items
            case "data.items"?: page = "{\"data\":{\"items\":\(items),\"n\":1},\"side\":\(value(0))}"
            case "items.0"?: page = "{\"items\":[\(items)]}"
            default:
                page = "{\"side\":\(value(0)),\"items\":\(items)}"
                if rng.next() % 6 == 0 { page = "{\"items\":[{\"id\":\"old\"}]," + page.dropFirst() }
            }
            var bytes = Array(page.utf8)
            if rng.next() % 10 == 0 { bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count)))) }
            if rng.next() % 20 == 0 { bytes = [0xEF, 0xBB, 0xBF] + bytes }
            let scanned = Self.outcome {
                try extraction.canonicalItems(in: bytes, url: "u").map { "\($0.key)=\(String(decoding: $0.canonical, as: UTF8.self))" }
            }
            let tree = Self.outcome { try extraction.items(in: bytes, url: "u").items.map { "\($0.key)=\($0.item.canonicalString)" } }
            #expect(scanned == tree, "\(page)")
            if case .success(let list) = tree, !list.isEmpty { accepted += 1 }
        }
        #expect(accepted > 300, "the pages must not all be refused")
    }
}
