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
            do {
                let (_, items) = try Self.seeds[pick].extraction.items(in: b, url: "fuzz://\(pick)")
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
}
