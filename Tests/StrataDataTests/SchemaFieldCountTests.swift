import Foundation
import LMDB
import StrataJSON
import StrataTestSupport
import Testing

@testable import EventStore
@testable import StrataData

/// The schema's field counts live in rows and a source's blocks of changes between keyframes
/// (``SchemaFieldRows``): as of every pass they are the counts of that pass's items, whatever
/// the blocks and keyframes in between; they follow from the log alone; damage is an error.
@Suite struct SchemaFieldCountTests {
    static let source = SourceDefinition(name: "fields", url: "file:///fields.json", items: "items")

    /// The items of version v: of 60 ids, those `random` keeps; each has `id`, `n` (a number,
    /// or text for a few), `tags` (numbers and text), and sometimes `note`; from version 80 on
    /// a field `late` that an item has on odd versions; from 100 to 139 a field of the
    /// version's own (thousands of shapes, more than a keyframe keeps); at 150, 120 fields
    /// more in one version.
    static func items(_ v: Int) -> [[String: JSONValue]] {
        var random = SplitMix64(seed: UInt64(v))
        return (1...60).compactMap { i -> [String: JSONValue]? in
            guard random.next() % 5 != 0 else { return nil }
            var item: [String: JSONValue] = ["id": .number(String(i))]
            item["n"] = random.next() % 7 == 0 ? .string("n\(i)") : .number(String(v + i))
            item["tags"] = .array(random.next() % 2 == 0 ? [.number("1"), .string("a")] : [.string("b")])
            if random.next() % 3 == 0 { item["note"] = random.next() % 2 == 0 ? .null : .string("x\(v)") }
            if v >= 80, v % 2 == 1 { item["late"] = .bool(i % 2 == 0) }
            if (100..<140).contains(v) { item["k\(v)_\(i % 7)"] = .number("1") }
            if v == 150 { for f in 0..<120 { item["wide\(f)"] = .number(String(f)) } }
            return item
        }
    }

    static func body(_ v: Int) -> [UInt8] { JSONValue.object(["items": .array(items(v).map { .object($0) })]).canonicalBytes }

    /// Every path's counts (items, then type → count) over `items`, as the schema counts them.
    static func oracle(_ items: [[String: JSONValue]]) -> [String: (items: Int, types: [String: Int])] {
        var out: [String: (items: Int, types: [String: Int])] = [:]
        for item in items {
            let shape = Shape(of: .object(item), prefix: "")
            for (path, types) in shape.byPath {
                var f = out[path] ?? (0, [:])
                f.items += 1
                for t in types { f.types[t, default: 0] += 1 }
                out[path] = f
            }
        }
        return out
    }

    static func importAll(_ store: EventStore, batch: Int, versions: Int) async throws {
        try await importVersions(store, source, versions: versions, batch: batch, body)
    }

    @Test(arguments: [false, true])
    func everyPassReadsTheCountsOfItsItems(encrypted: Bool) async throws {
        let store = try await makeStore(key: encrypted ? StoreKey.generate() : nil)
        let versions = 160
        try await Self.importAll(store, batch: 25, versions: versions)
        let passes = try await store.events(EventQuery(type: DataEvents.fetchCompleted)).map(\.seq)
        #expect(passes.count == versions)
        let tables = SchemaTables(store: store)
        var seen: [String: UInt64] = [:]
        for (v, seq) in zip(1..., passes) {
            let expected = Self.oracle(Self.items(v))
            let got = try await tables.fields(source: "fields", asOf: seq)
            #expect(got.items == Self.items(v).count, "items as of version \(v)")
            for path in expected.keys where seen[path] == nil { seen[path] = seq }
            // Every path seen by then is listed, with the counts of this version's items (none
            // for a path they do not have).
            #expect(Set(got.fields.map(\.path)) == Set(seen.keys), "paths as of version \(v)")
            for f in got.fields {
                let e = expected[f.path] ?? (0, [:])
                #expect(f.items == e.items && f.types == e.types, "\(f.path) as of version \(v): \(f.items) \(f.types), expected \(e)")
                #expect(f.lastSeq <= seq && f.firstSeq <= seen[f.path]! && f.firstSeq <= f.lastSeq, "\(f.path): first \(f.firstSeq), last \(f.lastSeq)")
            }
        }
        // Now is what the last pass left, read from the rows instead of the blocks.
        let now = try await tables.fields(source: "fields", asOf: nil)
        let last = try await tables.fields(source: "fields", asOf: passes.last!)
        #expect(now.items == last.items && now.fields == last.fields)
        // A field's last change: its counts then are its counts now, and differ just before
        // (the fields of one version aside).
        for f in now.fields where !f.path.hasPrefix("wide") && !f.path.hasPrefix("k") {
            let at = try await tables.fields(source: "fields", asOf: f.lastSeq).fields.first { $0.path == f.path }
            #expect(at?.items == f.items && at?.types == f.types)
            let before = try await tables.fields(source: "fields", asOf: f.lastSeq - 1).fields.first { $0.path == f.path }
            #expect(before == nil || before?.items != f.items || before?.types != f.types, "\(f.path) changed at \(f.lastSeq)")
        }
        // Keyframes between blocks, each when the changes since the last would pass four times
        // its size; blocks, not a row an event.
        let history = try await schemaRows(store, SchemaFieldRows.history)
        let keyframes = history.filter { $0.key.last == SchemaFieldRows.keyframeSuffix }.count
        #expect(keyframes >= 3 && keyframes <= versions / 10, "\(keyframes) keyframes")
        #expect(history.count <= versions / 4, "\(history.count) rows of counts for \(versions * 2) events")
        // More shapes than a keyframe keeps were seen; a keyframe keeps those some item has.
        let shapes = try await schemaRows(store, SchemaProjection.shapes).count
        let kept = try history.filter { $0.key.last == SchemaFieldRows.keyframeSuffix }.map {
            try SchemaFieldRows.Keyframe(try $0.value.withUnsafeBytes(CompressedValue.decode)).shapes.count
        }
        #expect(shapes > SchemaFieldRows.keptShapes && kept.allSatisfy { $0 <= SchemaFieldRows.keptShapes }, "\(shapes) shapes, keyframes keep \(kept)")
        #expect(try await store.verify().ok)
    }

    @Test func rowsFollowFromTheLogAlone() async throws {
        let one = try await makeStore()
        try await Self.importAll(one, batch: 1, versions: 120)
        let batched = try await makeStore()
        try await Self.importAll(batched, batch: 40, versions: 120)
        for table in [SchemaFieldRows.history, SchemaFieldRows.now] {
            let a = try await schemaRows(one, table), b = try await schemaRows(batched, table)
            #expect(a.map(\.key) == b.map(\.key) && a.map(\.value) == b.map(\.value), "\(table)")
        }
        let before = try await schemaRows(one, SchemaFieldRows.history)
        try await one.rebuild(["schema"])
        #expect(try await schemaRows(one, SchemaFieldRows.history).map(\.value) == before.map(\.value))
    }

    @Test func aDamagedKeyframeOrBlockIsAnError() async throws {
        let store = try await makeStore()
        try await Self.importAll(store, batch: 50, versions: 100)
        let passes = try await store.events(EventQuery(type: DataEvents.fetchCompleted)).map(\.seq)
        let db = try store.tables(of: "schema")[SchemaFieldRows.history]
        let rows = try await schemaRows(store, SchemaFieldRows.history)
        let keyframe = try #require(rows.first { $0.key.last == SchemaFieldRows.keyframeSuffix })
        let open = try #require(rows.last)
        #expect(open.key.last == SchemaFieldRows.blockSuffix && open.value.first == SchemaFieldRows.openMark)
        let tables = SchemaTables(store: store)
        // A keyframe cut short.
        try store.environment.write { txn in _ = try txn.put(db, key: keyframe.key, value: Array(keyframe.value.dropLast(3))) }
        await #expect(throws: EventStoreError.self) { _ = try await tables.fields(source: "fields", asOf: passes[0]) }
        try store.environment.write { txn in _ = try txn.put(db, key: keyframe.key, value: keyframe.value) }
        _ = try await tables.fields(source: "fields", asOf: passes[0])
        // The open block's last change names a path the keyframe does not have.
        var bad = open.value
        bad[bad.count - 2] = 0x7F
        try store.environment.write { txn in _ = try txn.put(db, key: open.key, value: bad) }
        await #expect(throws: EventStoreError.self) { _ = try await tables.fields(source: "fields", asOf: passes.last!) }
    }

    /// A source's shapes after its first new one are stored against it (the anchor): a few
    /// dozen bytes each instead of hundreds, read back as they were; a damaged anchor, or one
    /// that is gone, is an error when a shape stored against it is read. The items are records
    /// of 30 fields and some of 10 optional ones, so most items have a shape of their own.
    @Test func shapesAreStoredAgainstTheSourcesAnchor() async throws {
        let store = try await makeStore()
        try await importVersions(store, Self.source, versions: 30, batch: 10) { v in
            var random = SplitMix64(seed: UInt64(v))
            let items = (1...20).map { i -> JSONValue in
                var item: [String: JSONValue] = ["id": .number(String(i))]
                for f in 0..<30 { item["field\(f)"] = .string("v\(v)") }
                for f in 0..<10 where random.next() % 2 == 0 { item["optional\(f)"] = .number(String(f)) }
                return .object(item)
            }
            return JSONValue.object(["items": .array(items)]).canonicalBytes
        }
        let db = try store.tables(of: "schema")[SchemaProjection.shapes]
        let rows = try await schemaRows(store, SchemaProjection.shapes)
        let anchorKey = Array((SchemaProjection.anchorPrefix + Self.source.name).utf8)
        let anchorRef = try #require(rows.first { $0.key == anchorKey }?.value)
        let anchor = try #require(rows.first { $0.key == Array(anchorRef.hex.utf8) })
        #expect(anchor.value.first == 1)
        let shapes = rows.filter { $0.key != anchorKey }
        var alone = 0, stored = 0, anchored = 0
        let tables = try store.tables(of: "schema")
        for row in shapes {
            let ref = String(decoding: row.key, as: UTF8.self)
            let shape = try await store.read { txn in try SchemaProjection.stored(DocumentReader(transaction: txn, tables: tables), ref: ref) }
            let json = shape.json.canonicalBytes
            #expect(Hashing.sha256(json, prefix: 16).hex == ref)
            alone += CompressedValue.encode(json).count
            stored += row.value.count
            if row.value.first == 2 { anchored += 1 }
        }
        #expect(shapes.count > 100 && anchored == shapes.count - 1, "\(anchored) of \(shapes.count) shapes against the anchor")
        #expect(stored * 2 < alone, "\(stored) bytes stored, \(alone) compressed alone")

        let other = try #require(shapes.first { $0.value.first == 2 })
        let ref = String(decoding: other.key, as: UTF8.self)
        let read = { try await store.read { txn in try SchemaProjection.stored(DocumentReader(transaction: txn, tables: tables), ref: ref) } }
        // The anchor's frame cut short, then stored against another anchor, then gone.
        for damaged in [Array(anchor.value.dropLast(3)), other.value, nil] {
            try store.environment.write { txn in
                if let damaged { _ = try txn.put(db, key: anchor.key, value: damaged) } else { _ = try txn.delete(db, key: anchor.key) }
            }
            await #expect(throws: (any Error).self) { _ = try await read() }
        }
        try store.environment.write { txn in _ = try txn.put(db, key: anchor.key, value: anchor.value) }
        _ = try await read()
    }
}
