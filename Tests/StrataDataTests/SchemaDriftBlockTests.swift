import Foundation
import LMDB
import StrataJSON
import StrataTestSupport
import Testing

@testable import EventStore
@testable import StrataData

/// The schema's drifts live in blocks of a source's consecutive drifts (``SchemaDriftRows``):
/// every read of a span gives what the drifts were, the blocks follow from the log alone, and a
/// damaged block is an error.
@Suite struct SchemaDriftBlockTests {
    static let source = SourceDefinition(name: "shapes", url: "file:///shapes.json", items: "items")

    /// Version v of a list whose one item drifts every time: field `f(v)` comes and `f(v−1)`
    /// goes, `n` flips between a number and a string every seventh version, and version 60 brings
    /// 150 fields at once (one event's drifts, more than a block's capacity).
    static func version(_ v: Int) -> [UInt8] {
        var item: [String: JSONValue] = ["id": .number("1"), "f\(v)": .string("x\(v)")]
        item["n"] = v / 7 % 2 == 0 ? .number(String(v)) : .string("n\(v)")
        if v == 60 { for i in 0..<150 { item["wide\(i)"] = .bool(true) } }
        return JSONValue.object(["items": .array([.object(item)])]).canonicalBytes
    }

    static func importAll(_ store: EventStore, oneAtATime: Bool, versions: Int) async throws {
        try await importVersions(store, source, versions: versions, batch: oneAtATime ? 1 : 25, version)
    }

    @Test(arguments: [false, true])
    func everySpanReadsWhatDrifted(encrypted: Bool) async throws {
        let store = try await makeStore(key: encrypted ? StoreKey.generate() : nil)
        try await Self.importAll(store, oneAtATime: false, versions: 200)
        let tables = SchemaTables(store: store)
        let all = try await tables.drift(source: "shapes")
        // Every version: f(v) added and, from the second, f(v−1) gone; n's type every seventh;
        // the 150 wide fields added at 60 and gone at 61; id and n added at the first.
        #expect(all.filter { $0.path.hasPrefix("f") && $0.kind == "added" }.count == 200)
        #expect(all.filter { $0.path.hasPrefix("f") && $0.kind == "gone" }.count == 199)
        #expect(all.filter { $0.path == "n" && $0.kind == "typeChanged" }.count == 28)
        #expect(all.filter { $0.path.hasPrefix("wide") }.count == 300)
        #expect(all.count == 729)
        #expect(all.map(\.seq) == all.map(\.seq).sorted())
        let wide = try #require(all.first { $0.path == "wide0" })
        #expect(wide.kind == "added" && wide.after == ["boolean"] && wide.items == 1 && wide.example == .bool(true))
        #expect(Set(all.map(\.at)).count > 1)

        let seqs = Array(Set(all.map(\.seq))).sorted()
        let points = [0] + seqs.enumerated().filter { $0.offset % 9 == 0 }.map(\.element) + [seqs.last! + 1, .max]
        for after in points {
            for upTo in points where upTo >= after {
                let got = try await tables.drift(source: "shapes", after: after, upTo: upTo)
                #expect(got == all.filter { $0.seq > after && $0.seq <= upTo }, "after \(after), up to \(upTo)")
            }
        }
        // Blocks, not a row a drift; closed ones compressed, the last open.
        let rows = try await schemaRows(store, SchemaDriftRows.table)
        #expect(rows.count > 4 && rows.count < all.count / 20)
        if !encrypted {
            #expect(rows.last?.value.first == SchemaDriftRows.openMark)
            #expect(rows.dropLast().allSatisfy { $0.value.first == 1 })
        }
        #expect(try await store.verify().ok)
    }

    @Test func blocksFollowFromTheLogAlone() async throws {
        let one = try await makeStore()
        try await Self.importAll(one, oneAtATime: true, versions: 120)
        let batched = try await makeStore()
        try await Self.importAll(batched, oneAtATime: false, versions: 120)
        let a = try await schemaRows(one, SchemaDriftRows.table), b = try await schemaRows(batched, SchemaDriftRows.table)
        // The times differ (one a minute per import call); the blocks' keys are the same seqs.
        #expect(a.map(\.key) == b.map(\.key))
        #expect(try await SchemaTables(store: one).drift(source: "shapes").map(\.path) == SchemaTables(store: batched).drift(source: "shapes").map(\.path))
        // A rebuild writes the same bytes.
        try await one.rebuild(["schema"])
        #expect(try await schemaRows(one, SchemaDriftRows.table).map(\.value) == a.map(\.value))
    }

    @Test func aDamagedBlockIsAnError() async throws {
        let store = try await makeStore()
        try await Self.importAll(store, oneAtATime: false, versions: 100)
        let db = try store.tables(of: "schema")[SchemaDriftRows.table]
        try store.environment.write { txn in
            let c = try txn.cursor(db)
            let entry = try #require(try c.first())
            var value = [UInt8](entry.value)
            value[value.count - 3] ^= 0x5A
            let key = [UInt8](entry.key)
            _ = try txn.put(db, key: key, value: value)
        }
        await #expect(throws: EventStoreError.self) { _ = try await SchemaTables(store: store).drift(source: "shapes") }
    }
}
