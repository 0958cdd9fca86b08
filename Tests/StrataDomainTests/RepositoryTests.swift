import EventStore
import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import Testing

/// The LMDB repositories on a real store holding the three cars versions.
@Suite struct RepositoryTests {
    @Test func listsFiltersSearchesSortsAndPages() async throws {
        let (r, _) = try await carsStore()
        let all = try await r.items.items(ItemQuery(source: "cars"))
        #expect(all.total == 25 && all.items.count == 25 && !all.usedIndex && all.seq == nil)
        let toyotas = try await r.items.items(ItemQuery(source: "cars", filters: [FieldFilter(path: "make", value: "Toyota")]))
        #expect(toyotas.usedIndex)
        #expect(!toyotas.items.isEmpty && toyotas.items.allSatisfy { $0.value(atPath: "make") == .string("Toyota") })
        let sorted = try await r.items.items(ItemQuery(source: "cars", sort: ItemSort(path: "price", descending: true), limit: 5, offset: 1))
        #expect(sorted.items.count == 5 && sorted.total == 25)
        let prices = sorted.items.compactMap { if case .number(let n)? = $0.value(atPath: "price") { Int(n) } else { nil } }
        #expect(prices == prices.sorted(by: >))
        let search = try await r.items.items(ItemQuery(source: "cars", search: "corolla"))
        #expect(!search.items.isEmpty && search.items.allSatisfy { $0.title == "Corolla" })
        let none = try await r.items.items(ItemQuery(source: "cars", filters: [FieldFilter(path: "rating", value: "no such")]))
        #expect(none.total == 0 && !none.usedIndex)
    }

    /// Index lookups answer exactly what a scan answers, for every value of every indexed field,
    /// at the head and after a rebuild of the projections.
    @Test func indexEqualsScan() async throws {
        let (r, _) = try await carsStore()
        func check() async throws {
            let all = try await r.items.items(ItemQuery(source: "cars"))
            for path in ["make", "model"] {
                let values = Set(all.items.compactMap { $0.value(atPath: path).flatMap { if case .string(let s) = $0 { s } else { nil } } })
                #expect(values.count > 1)
                for v in values {
                    let indexed = try #require(try await r.tables.items(source: "cars", path: path, equals: v))
                    let scanned = all.items.filter { $0.value(atPath: path) == .string(v) }
                    #expect(indexed.map(\.id).sorted() == scanned.map(\.id).sorted(), "\(path)=\(v)")
                    // A page through the index's keys equals the scan's page in natural id order.
                    let ids = scanned.map(\.id).sorted(by: Item.idPrecedes)
                    let page = try await r.items.items(ItemQuery(source: "cars", filters: [FieldFilter(path: path, value: v)], limit: 2, offset: 1))
                    #expect(page.usedIndex && page.total == ids.count && page.items.map(\.id) == Array(ids.dropFirst().prefix(2)), "\(path)=\(v)")
                }
            }
            #expect(try await r.tables.items(source: "cars", path: "price", equals: "1") == nil)
        }
        try await check()
        try await r.store.rebuild()
        try await check()
    }

    /// `--sort` on an indexed field reads the sorted index and answers what the scan answers,
    /// ascending and descending, by offset and after an id, at the head and after a rebuild; a
    /// sort on a field that is not indexed scans.
    @Test func sortedIndexEqualsScan() async throws {
        let (r, _) = try await carsStore()
        func check() async throws {
            let all = try await r.items.items(ItemQuery(source: "cars"))
            for path in ["make", "model", "price"] {
                for descending in [false, true] {
                    let order = ItemSort(path: path, descending: descending)
                    let expected = Self.referenceSort(all.items, path: path, descending: descending)
                    let whole = try await r.items.items(ItemQuery(source: "cars", sort: order))
                    #expect(whole.usedIndex == (path != "price"), "\(path)")
                    #expect(whole.items.map(\.id) == expected, "\(path) \(descending)")
                    #expect(whole.total == expected.count)
                    for offset in [0, 1, 7, 24, 25] {
                        let page = try await r.items.items(ItemQuery(source: "cars", sort: order, limit: 4, offset: offset))
                        #expect(page.items.map(\.id) == Array(expected.dropFirst(offset).prefix(4)), "\(path) \(descending) offset \(offset)")
                    }
                    for (i, id) in expected.enumerated() where i % 6 == 0 {
                        let page = try await r.items.items(ItemQuery(source: "cars", sort: order, limit: 3, after: id))
                        #expect(page.items.map { $0.id } == Array(expected.dropFirst(i + 1).prefix(3)), "\(path) \(descending) after \(id)")
                    }
                }
            }
        }
        try await check()
        try await r.store.rebuild()
        try await check()
    }

    /// The documented order, worked out independently: numbers by value, then text by its
    /// bytes, ties by id; descending reverses those; items without a scalar last, by id.
    static func referenceSort(_ items: [Item], path: String, descending: Bool) -> [String] {
        func rank(_ item: Item) -> (Int, Double, [UInt8])? {
            switch item.value(atPath: path) {
            case .number(let n)?: (0, Double(n)!, [])
            case .string(let t)?: (1, 0, Array(t.utf8))
            case .bool(let b)?: (1, 0, Array((b ? "true" : "false").utf8))
            case .null?: (1, 0, Array("null".utf8))
            default: nil
            }
        }
        var valued = items.compactMap { i in rank(i).map { (i.id, $0) } }.sorted { a, b in
            if a.1.0 != b.1.0 { return a.1.0 < b.1.0 }
            if a.1.1 != b.1.1 { return a.1.1 < b.1.1 }
            if a.1.2 != b.1.2 { return a.1.2.lexicographicallyPrecedes(b.1.2) }
            return Item.idPrecedes(a.0, b.0)
        }.map(\.0)
        if descending { valued.reverse() }
        return valued + items.filter { rank($0) == nil }.map(\.id).sorted(by: Item.idPrecedes)
    }

    /// Changing a source's index fields reindexes its present items.
    @Test func redefiningTheIndexReindexes() async throws {
        let (r, _) = try await carsStore()
        var def = carsDefinition
        def.index = ["rating"]
        try await SourceCatalog(store: r.store).define(def, replace: true)
        #expect(try await r.tables.indexedPaths(source: "cars") == ["rating"])
        #expect(try await r.tables.items(source: "cars", path: "make", equals: "Toyota") == nil)
        let all = try await r.items.items(ItemQuery(source: "cars"))
        let rating = try #require(all.items.first?.value(atPath: "rating")).canonicalString
        let hits = try #require(try await r.tables.items(source: "cars", path: "rating", equals: rating))
        #expect(hits.map(\.id).sorted() == all.items.filter { $0.value(atPath: "rating")?.canonicalString == rating }.map(\.id).sorted())
    }

    @Test func readsAsOfEveryVersion() async throws {
        let (r, ends) = try await carsStore()
        let v1 = try await r.items.items(ItemQuery(source: "cars", at: .seq(ends[0])))
        #expect(v1.total == 24 && v1.seq == ends[0])
        let v2 = try await r.items.items(ItemQuery(source: "cars", at: .seq(ends[1])))
        #expect(v2.total == 25 && !v2.items.contains { $0.id == "9" })
        let byDate = try await r.items.items(ItemQuery(source: "cars", at: .date(Date(timeIntervalSince1970: 1_767_312_000 + 3600))))
        #expect(byDate.total == v2.total)
        // As-of reads use the index's history and answer as a scan would.
        let asOfFilter = try await r.items.items(ItemQuery(source: "cars", filters: [FieldFilter(path: "make", value: "Toyota")], at: .seq(ends[0])))
        let scanned = try await r.items.items(ItemQuery(source: "cars", at: .seq(ends[0])))
        #expect(asOfFilter.usedIndex && asOfFilter.items.allSatisfy { $0.value(atPath: "make") == .string("Toyota") })
        #expect(asOfFilter.items.map(\.id) == scanned.items.filter { $0.value(atPath: "make") == .string("Toyota") }.map(\.id))
        let before = try await r.items.items(ItemQuery(source: "cars", at: .date(Date(timeIntervalSince1970: 0))))
        #expect(before.total == 0)
        await #expect(throws: RepositoryError.self) { try await r.items.items(ItemQuery(source: "cars", at: .seq(ends[2] + 100))) }
    }

    @Test func historyShowsRemovalAndReappearanceWithRuns() async throws {
        let (r, ends) = try await carsStore()
        let h = try await r.items.history(source: "cars", id: "9", upTo: .now)
        #expect(h.map(\.kind) == [.added, .removed, .reappeared])
        #expect(h.allSatisfy { $0.run != nil && $0.eventType != nil })
        #expect(h[2].changes.contains { $0.path == "/price" && $0.kind == .replaced })
        let cut = try await r.items.history(source: "cars", id: "9", upTo: .seq(ends[1]))
        #expect(cut.map(\.kind) == [.added, .removed])
        #expect(try await r.items.history(source: "cars", id: "nope", upTo: .now).isEmpty)
        let three = try await r.items.history(source: "cars", id: "3", upTo: .now)
        #expect(three.map(\.kind) == [.added, .changed, .changed])
        #expect(three[2].changes.map(\.path).sorted() == ["/price", "/rating"])
    }

    @Test func diffBetweenVersions() async throws {
        let (r, ends) = try await carsStore()
        let d = try await r.items.diff(source: "cars", from: .seq(ends[0]), to: .seq(ends[1]))
        #expect(d.count(.added) == 3 && d.count(.removed) == 2 && d.count(.changed) == 4)
        let back = try await r.items.diff(source: "cars", from: .seq(ends[1]), to: .now)
        #expect(back.items.first { $0.id == "9" }?.kind == .reappeared)
        #expect(try await r.items.diff(source: "cars", from: .now, to: .now).items.isEmpty)
    }

    @Test func itemAndImageAndErrors() async throws {
        let (r, ends) = try await carsStore()
        let item = try #require(try await r.items.item(source: "cars", id: "3", at: .now))
        #expect(item.title == "RAV4" && item.version == 3)
        let old = try #require(try await r.items.item(source: "cars", id: "3", at: .seq(ends[0])))
        #expect(old.version == 1 && old.value(atPath: "price") != item.value(atPath: "price"))
        #expect(try await r.items.item(source: "cars", id: "26", at: .seq(ends[0])) == nil)
        #expect(try await r.items.imageData(ItemImage(url: "", sha256: String(repeating: "0", count: 64), size: 0, contentType: "")) == nil)
        await #expect(throws: RepositoryError(.notFound, "no source named boats; known: cars")) {
            try await r.items.items(ItemQuery(source: "boats"))
        }
        let sources = try await r.sources.sources()
        #expect(sources.map(\.name) == ["cars"])
        #expect(sources[0].lastRun?.succeeded == true && sources[0].lastRun?.seq == ends[2])
    }

    @Test func logEntriesAndPoints() async throws {
        let (r, ends) = try await carsStore()
        let entries = try await r.log.entries(LogQuery(stream: "cars", type: DataEvents.fetchCompleted, limit: 10, newestFirst: false))
        #expect(entries.map(\.seq) == ends)
        #expect(entries[0][metadata: "complete"] == "true" && !entries[0].isFailure && entries[0].hash.count == 64)
        #expect(try await r.log.resolve(.now) == ends[2])
        #expect(try await r.log.resolve(.seq(3)) == 3)
        #expect(try await r.log.resolve(.date(Date(timeIntervalSince1970: 1_767_225_600 + 60))) == ends[0])
    }
}
