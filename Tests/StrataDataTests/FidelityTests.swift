import EventStore
import FixtureServer
import Foundation
import StrataData
import Testing

/// Mirror fidelity against the real fixture server: details that change on their own, paging
/// styles of real APIs, and backfills read by the date they were observed.
@Suite struct FidelityTests {
    func species(_ server: FixtureServer) -> SourceDefinition {
        SourceDefinition(name: "species", url: server.baseURL + "/species/all", items: "results", id: ["name"], detailURLField: "url")
    }

    @Test func detailsThatChangeWhileTheListDoesNotAreRevalidated() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var options = fetchOptions()
            options.details = true
            let source = species(server)
            let first = try await fetcher.fetch(source, options: options)
            #expect(first.added == 3 && first.details == 3)
            // Unchanged: every detail costs a 304 and stores no body.
            let bodies = try await store.stats().blobs
            let same = try await fetcher.fetch(source, options: options)
            #expect(same.details == 0 && same.detailsNotModified == 3 && same.changed == 0, "\(same)")
            #expect(try await store.stats().blobs == bodies)
            let beforeReleases = try await store.head().seq
            // Four releases: the list never changes, the details do.
            for v in 2...4 {
                server.version = v
                let r = try await fetcher.fetch(source, options: options)
                #expect(r.changed == 0 && r.added == 0 && r.pagesNotModified == r.pages, "\(r)")
                #expect(r.details + r.detailsNotModified == 3)
            }
            let tables = ItemTables(store: store)
            // A collection diff counts an item whose detail changed as changed, with the detail's fields.
            let diff = try await tables.diff(source: "species", from: beforeReleases, to: try await store.head().seq)
            #expect(Set(diff.map(\.id)) == ["bulbasaur", "charmander", "squirtle"] && diff.allSatisfy { $0.kind == .changed })
            #expect(diff.first { $0.id == "charmander" }?.changes.map(\.path).sorted() == ["detail:/base_happiness", "detail:/habitat"])
            let history = try await tables.history(source: "species", id: "bulbasaur")
            // One list version, and a detail version per release that changed it (v2 happiness and
            // text, v3 text; v4 none).
            #expect(history.filter { $0.origin == .list }.count == 1)
            let details = history.filter { $0.origin == .detail }
            #expect(details.map(\.kind) == [.added, .changed, .changed])
            #expect(details[1].changes.map(\.path) == ["/base_happiness", "/flavor_text"])
            #expect(details[2].changes.map(\.path) == ["/flavor_text"])
            #expect(try await tables.history(source: "species", id: "squirtle").filter { $0.origin == .detail }.count == 4)
            let now = try await tables.item(source: "species", id: "charmander")
            #expect(now?.detail?.value(atPath: "habitat") == .string("mountain"))

            // The cheaper policy misses such changes: nothing is asked again.
            server.version = 1
            var changedOnly = options
            changedOnly.detailPolicy = .changed
            let cheap = try await fetcher.fetch(source, options: changedOnly)
            #expect(cheap.details == 0 && cheap.detailsNotModified == 0)
            // A max age keeps recently seen details from being asked again.
            var recent = options
            recent.detailMaxAge = 3600
            let skipped = try await fetcher.fetch(source, options: recent)
            #expect(skipped.details + skipped.detailsNotModified == 0, "\(skipped)")
            recent.detailMaxAge = 0
            let all = try await fetcher.fetch(source, options: recent)
            #expect(all.details == 3, "\(all)")
        }
    }

    @Test(arguments: [
        ("cursor", SourceDefinition(name: "cars", url: "/cars/offers", items: "results", pageSize: 7, cursorPath: "meta.next_cursor", cursorParam: "cursor")),
        ("offset", SourceDefinition(name: "cars", url: "/cars/offers", items: "results", pageSize: 7, offsetParam: "offset", totalPath: "total")),
        ("offset, no total", SourceDefinition(name: "cars", url: "/cars/offers", items: "results", pageSize: 8, offsetParam: "offset")),
        ("after", SourceDefinition(name: "cars", url: "/cars/offers", items: "results", pageSize: 5, afterParam: "starting_after", hasMorePath: "has_more")),
        ("after, no flag", SourceDefinition(name: "cars", url: "/cars/offers", items: "results", pageSize: 5, afterParam: "starting_after"))
    ])
    func pagingStyles(_ style: String, _ template: SourceDefinition) async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            var source = template
            source.url = server.baseURL + template.url
            let r = try await fetcher.fetch(source, options: fetchOptions())
            #expect(r.complete && r.added == 24, "\(style): \(r)")
            // 24 items: whole pages and a short last one; an empty page only where nothing else
            // says the list ended (no total after full pages; no has-more flag).
            let expected = ["cursor": 4, "offset": 4, "offset, no total": 4, "after": 5, "after, no flag": 6][style]
            #expect(r.pages == expected, "\(style)")
            #expect(try await itemKeys(store, "cars").count == 24)
            // Each page recorded where it leads (the last: nowhere), so an unchanged re-fetch pages
            // on from the 304s without reading the stored pages, and walks the same pages.
            let pages = try await store.events(EventQuery(type: DataEvents.pageFetched))
            #expect(pages.count == expected && pages.dropLast().allSatisfy { ($0[metadata: "next"] ?? "").hasPrefix("http") }, "\(style)")
            #expect(pages.last?[metadata: "next"] == "" && zip(pages, pages.dropFirst()).allSatisfy { $0[metadata: "next"] == $1[metadata: "url"] })
            let again = try await fetcher.fetch(source, options: fetchOptions())
            #expect(
                again.complete && again.pages == expected && again.pagesNotModified == again.pages && again.added == 0 && again.changed == 0,
                "\(style), unchanged: \(again)")
            #expect(r.pagesParsed == expected && again.pagesParsed == 0, "\(style): the unchanged pages were not parsed again")
            #expect(try await itemKeys(store, "cars").count == 24)
        }
    }

    /// Another client changes one entry on page 3 of an otherwise unchanged list: the re-fetch,
    /// asking for the known pages ahead, takes the 304s before it, fetches the changed page, and
    /// ends with the same items as a fresh store's fetch.
    @Test func aPageChangedInTheMiddleOfAnUnchangedListIsFetchedAndTheRestFollow() async throws {
        try await withFixtureServer { server in
            let source = SourceDefinition(name: "catalog", url: server.baseURL + "/catalog/entries", pageParam: "page", pageSize: 10)
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            let first = try await fetcher.fetch(source, options: fetchOptions())
            #expect(first.complete && first.pages >= 4 && first.added == 40, "\(first)")
            #expect(server.changeItem(list: "/catalog/entries", key: "1025", mergePatch: .object(["text": .string("changed by another client")])))
            let again = try await fetcher.fetch(source, options: fetchOptions())
            #expect(again.complete && again.pages == first.pages && again.pagesNotModified == first.pages - 1 && again.changed == 1, "\(again)")
            #expect(again.pagesParsed == 1, "only the changed page was parsed: \(again)")
            let fresh = try await makeStore()
            _ = try await Fetcher(store: fresh, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger()).fetch(
                source, options: fetchOptions())
            let mine = try await ItemTables(store: store).items(source: "catalog"), theirs = try await ItemTables(store: fresh).items(source: "catalog")
            #expect(mine.map(\.id) == theirs.map(\.id) && mine.map(\.document) == theirs.map(\.document))
            #expect(mine.first { $0.id == "1025" }?.document.value(atPath: "text") == .string("changed by another client"))
        }
    }

    @Test func aCursorThatLoopsIsAClearError() async throws {
        try await withFixtureServer { server in
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), sleeper: RecordingSleeper(), logger: quietLogger())
            server.setFault(.cursorLoop, for: "/cars")
            let source = SourceDefinition(
                name: "cars", url: server.baseURL + "/cars/offers", items: "results", pageSize: 7,
                cursorPath: "meta.next_cursor", cursorParam: "cursor")
            await #expect { _ = try await fetcher.fetch(source, options: fetchOptions()) } throws: { error in
                (error as? FetchError)?.message.contains("meta.next_cursor repeats") == true
            }
            #expect(try await itemKeys(store, "cars").isEmpty)
            let failed = try await store.events(EventQuery(type: DataEvents.fetchFailed))
            #expect(failed.count == 1)
        }
    }

    /// Snapshots imported in every order answer date reads as an oracle that folds them by date.
    @Test func backfillsInEveryOrderAreReadByTheirDate() async throws {
        let dated = [("2019-01-01T00:00:00Z", 1), ("2021-01-01T00:00:00Z", 2), ("2023-01-01T00:00:00Z", 3)]
        let bodies = try (1...3).map { try fixture("cars/v\($0)/offers.json") }
        func ids(_ version: Int) throws -> [String] {
            guard case .array(let items)? = try JSONValue(parsing: bodies[version - 1]).value(atPath: "results") else { return [] }
            return items.compactMap { if case .number(let n)? = $0.value(atPath: "id") { n } else { nil } }.sorted()
        }
        let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
        for order in orders {
            let store = try await makeStore()
            let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quietLogger())
            let source = SourceDefinition(name: "cars", url: "file:///cars.json", items: "results")
            _ = try await SourceCatalog(store: store).define(source)
            for i in order {
                _ = try await fetcher.importSnapshots(
                    source, files: [("v\(dated[i].1).json", bodies[dated[i].1 - 1])],
                    recordedAt: Timestamp(iso8601: dated[i].0))
            }
            let tables = ItemTables(store: store)
            for (date, expected) in [
                ("2018-06-01T00:00:00Z", 0), ("2019-01-01T00:00:00Z", 1), ("2020-06-01T00:00:00Z", 1),
                ("2022-01-01T00:00:00Z", 2), ("2024-01-01T00:00:00Z", 3)
            ] {
                let seq = try await tables.seq(source: "cars", observedAt: Timestamp(iso8601: date)!)
                let got = seq == 0 ? [] : try await tables.items(source: "cars", asOf: seq).map(\.id).sorted()
                let want = expected == 0 ? [] : try ids(expected)
                #expect(got == want, "order \(order), \(date)")
            }
            // Now is the newest observation, whatever came last.
            let newest = try ids(3)
            #expect(try await itemKeys(store, "cars").sorted() == newest, "order \(order)")
            // History is in observed order: a price that went 2019 → 2021 → 2023.
            let h = try await tables.history(source: "cars", id: "3").filter { $0.origin == .list }
            #expect(h.map(\.recordedAt) == h.map(\.recordedAt).sorted(), "order \(order)")
            let allBackfilled = h.allSatisfy { $0.backfilled }
            #expect(allBackfilled)
            #expect(try await store.verify().ok)
        }
    }
}

/// An item's history read for a few of its versions places, numbers and labels every version as
/// a fold of the parsed versions in observed order does, and holds the picked ones in full: on
/// histories imported in log order (where neighbours are known to differ unparsed) and out of it
/// (backfills, restatements of the same document, removals and returns).
@Suite struct PagedHistoryTests {
    @Test(arguments: [(UInt64(1), false), (2, true), (3, true), (4, false)])
    func aPagedHistoryReadsAsTheWholeOne(_ seed: UInt64, shuffled: Bool) async throws {
        var rng = SplitMix(seed: seed)
        let store = try await makeStore()
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quietLogger())
        let source = SourceDefinition(name: "cars", url: "file:///cars.json", items: "results")
        _ = try await SourceCatalog(store: store).define(source)
        // 40 snapshots a day apart, imported in date order or shuffled; values from a small set,
        // so the same document comes back (a restatement once reordered).
        var days = Array(0..<40)
        if shuffled { for i in days.indices.reversed() where i > 0 { days.swapAt(i, Int(rng.next() % UInt64(i + 1))) } }
        for day in days {
            var items: [String] = []
            for id in 1...4 where rng.next() % 5 != 0 {
                items.append(#"{"id":\#(id),"price":\#(rng.next() % 3),"note":"\#(["a b c", "a x c", "b"][Int(rng.next() % 3)])"}"#)
            }
            let at = Timestamp(microseconds: 1_600_000_000_000_000 + Int64(day) * 86_400_000_000)
            _ = try await fetcher.importSnapshots(
                source, files: [("d\(day).json", Array(#"{"results":[\#(items.joined(separator: ","))]}"#.utf8))], recordedAt: at)
        }
        let tables = ItemTables(store: store)
        for id in ["1", "2", "3", "4"] {
            // The oracle: every version parsed, put in observed order, folded.
            let parsed = try await store.read { txn in
                try DocumentReader(transaction: txn, tables: try store.tables(of: "items")).history(collection: "cars", key: id, derivingChanges: false)
            }.sorted { ($0.recordedAt, $0.seq) < ($1.recordedAt, $1.seq) }
            var expected: [(seq: UInt64, kind: ChangeKind, document: JSONValue, changes: [PatchOperation])] = []
            var previous: DocumentVersion?
            var lastPresent: JSONValue?
            for v in parsed {
                let kind: ChangeKind?
                switch (previous, v.isRemoved) {
                case (nil, true): kind = nil
                case (nil, false): kind = .added
                case (let p?, true): kind = p.isRemoved ? nil : .removed
                case (let p?, false): kind = p.isRemoved ? .reappeared : (p.document == v.document ? nil : .changed)
                }
                guard let kind else { continue }
                let changes: [PatchOperation] =
                    switch kind {
                    case .changed: previous!.document.diff(to: v.document)
                    case .reappeared: (lastPresent ?? previous!.document).diff(to: v.document)
                    default: []
                    }
                expected.append((v.seq, kind, kind == .removed ? (lastPresent ?? previous!.document) : v.document, changes))
                previous = v
                if kind != .removed { lastPresent = v.document }
            }
            let whole = try await tables.history(source: "cars", id: id)
            #expect(whole.map(\.seq) == expected.map(\.seq) && whole.map(\.kind) == expected.map(\.kind), "seed \(seed), item \(id)")
            #expect(whole.map(\.version) == whole.indices.map { $0 + 1 })
            #expect(whole.map(\.document) == expected.map(\.document) && whole.map(\.changes) == expected.map(\.changes), "seed \(seed), item \(id)")
            for newest in [1, 3, 100] {
                let paged = try await tables.history(source: "cars", id: id) { Set($0.sorted().suffix(newest)) }
                let picked = Set(whole.map(\.seq).sorted().suffix(newest))
                #expect(paged.map(\.seq) == whole.map(\.seq) && paged.map(\.version) == whole.map(\.version) && paged.map(\.kind) == whole.map(\.kind))
                for (p, w) in zip(paged, whole) {
                    #expect(p.isDetailed == picked.contains(p.seq), "seed \(seed), item \(id), seq \(p.seq)")
                    if p.isDetailed { #expect(p == w) } else { #expect(p.document == .null && p.changes.isEmpty) }
                }
            }
            // Bounded by a time observed, as the whole read bounded the same way.
            let midway = Timestamp(microseconds: 1_600_000_000_000_000 + 20 * 86_400_000_000)
            let bounded = try await tables.history(source: "cars", id: id, observedBy: midway)
            let boundedPaged = try await tables.history(source: "cars", id: id, observedBy: midway) { Set($0) }
            #expect(bounded == boundedPaged && bounded.allSatisfy { $0.recordedAt <= midway })
        }
    }
}

/// `--where` as of a seq through the index's history equals a scan, on generated histories.
@Suite struct IndexHistoryTests {
    /// Also encrypted: its entries follow the ids' digests, and pages are ordered on read.
    @Test(arguments: [(UInt64(1), false), (2, false), (3, false), (4, true)])
    func indexAnswersEqualScansAtEverySeq(_ seed: UInt64, encrypted: Bool) async throws {
        var rng = SplitMix(seed: seed)
        let store = try await makeStore(key: encrypted ? StoreKey.generate() : nil)
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quietLogger())
        let makes = ["Ford", "Kia", "Fiat", "Opel"]
        var source = SourceDefinition(name: "cars", url: "file:///cars.json", items: "results", index: ["make"])
        _ = try await SourceCatalog(store: store).define(source)
        for round in 0..<25 {
            // Each snapshot: a random subset of 40 ids with random makes (adds, changes, removals, returns).
            // Numeric ids (natural order is not byte order: 9 < 10) and a few text ids.
            var items: [String] = []
            for id in 1...40 where rng.next() % 4 != 0 {
                let key = id % 9 == 0 ? #""x\#(id)""# : "\(id)"
                items.append(#"{"id":\#(key),"make":"\#(makes[Int(rng.next() % 4)])","n":\#(round)}"#)
            }
            _ = try await fetcher.importSnapshots(
                source, files: [("r\(round).json", Array(#"{"results":[\#(items.joined(separator: ","))]}"#.utf8))],
                recordedAt: nil)
            if round == 12 {
                // The index changes mid-history: reads before it scan, after it use the new history.
                source.index = ["make", "n"]
                _ = try await SourceCatalog(store: store).define(source, replace: true)
            }
            try await Self.headPagesEqualAScan(ItemTables(store: store), makes: makes, "seed \(seed), round \(round)")
        }
        let tables = ItemTables(store: store)
        let head = try await store.head().seq
        var indexed = 0
        for seq in stride(from: UInt64(1), through: head, by: 1) {
            let scan = try await tables.items(source: "cars", asOf: seq)
            for make in makes {
                let expected = scan.filter { $0.document.value(atPath: "make") == .string(make) }.map(\.id).sorted()
                if let viaIndex = try await tables.items(source: "cars", path: "make", equals: make, asOf: seq) {
                    #expect(viaIndex.map(\.id).sorted() == expected, "seed \(seed), seq \(seq), \(make)")
                    indexed += 1
                    // Pages read from the index's keys: natural id order, by offset and after an id, and the total.
                    let natural = expected.sorted { KeyedDocumentProjection.naturalKey($0).lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey($1)) }
                    for (offset, limit) in [(0, 3), (2, 5), (natural.count - 1, 10), (natural.count + 3, 2)] where offset >= 0 {
                        let page = try #require(try await tables.page(source: "cars", path: "make", equals: make, asOf: seq, offset: offset, limit: limit))
                        #expect(
                            page.total == natural.count && page.items.map(\.id) == Array(natural.dropFirst(offset).prefix(limit)),
                            "seed \(seed), seq \(seq), \(make), offset \(offset)")
                    }
                    if natural.count > 1 {
                        let after = try #require(try await tables.page(source: "cars", path: "make", equals: make, asOf: seq, after: natural[0], limit: 2))
                        #expect(after.items.map(\.id) == Array(natural.dropFirst().prefix(2)))
                    }
                }
            }
        }
        // Every seq after the last definition is answered by the index.
        #expect(indexed > 0)
    }

    /// Pages at the head (the value's counter and its entries in natural order): the total, pages
    /// by offset and after an id, equal a scan's, for every value.
    static func headPagesEqualAScan(_ tables: ItemTables, makes: [String], _ context: String) async throws {
        let scan = try await tables.items(source: "cars")
        for make in makes {
            let natural = scan.filter { $0.document.value(atPath: "make") == .string(make) }.map(\.id)
                .sorted { KeyedDocumentProjection.naturalKey($0).lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey($1)) }
            for (offset, limit) in [(0, 3), (0, 100), (2, 5), (natural.count - 1, 10), (natural.count + 3, 2), (1, 0)] where offset >= 0 {
                let page = try #require(try await tables.page(source: "cars", path: "make", equals: make, offset: offset, limit: limit))
                #expect(
                    page.total == natural.count && page.items.map(\.id) == Array(natural.dropFirst(offset).prefix(limit)),
                    "\(context), \(make), offset \(offset), limit \(limit)")
            }
            for (i, id) in natural.enumerated() {
                let after = try #require(try await tables.page(source: "cars", path: "make", equals: make, after: id, limit: 2))
                #expect(after.total == natural.count && after.items.map(\.id) == Array(natural.dropFirst(i + 1).prefix(2)), "\(context), \(make) after \(id)")
            }
        }
        // A value no item has: no counter, an empty page.
        let none = try #require(try await tables.page(source: "cars", path: "make", equals: "Lada", limit: 5))
        #expect(none.total == 0 && none.items.isEmpty)
    }
}

/// A small deterministic generator for test histories.
typealias SplitMix = SplitMix64

/// A path through arrays (`tags`, `labels.name`) keeps an index entry per element: `--where` now
/// and as of every seq equals a scan that matches any element, in plain and encrypted stores.
@Suite struct MultiValuedIndexTests {
    @Test(arguments: [(UInt64(11), false), (12, false), (13, true)])
    func arrayPathsAnswerAsAScanAtEverySeq(_ seed: UInt64, encrypted: Bool) async throws {
        var rng = SplitMix(seed: seed)
        let store = try await makeStore(key: encrypted ? StoreKey.generate() : nil)
        let fetcher = Fetcher(store: store, client: CurlHTTPClient(), logger: quietLogger())
        let names = ["bug", "ui", "docs", "perf"]
        let source = SourceDefinition(name: "issues", url: "file:///issues.json", items: "results", index: ["tags", "labels.name"])
        _ = try await SourceCatalog(store: store).define(source)
        for round in 0..<20 {
            // Each snapshot: a random subset of 30 issues with random tag and label sets (empty,
            // repeated values, reordered), so entries are added, moved, kept and dropped per element.
            var items: [String] = []
            for id in 1...30 where rng.next() % 5 != 0 {
                let tags = names.filter { _ in rng.next() % 3 == 0 }.map { #""\#($0)""# }
                var labels = names.filter { _ in rng.next() % 3 == 0 }.map { #"{"name":"\#($0)"}"# }
                if rng.next() % 7 == 0, let first = labels.first { labels.append(first) }
                items.append(#"{"id":\#(id),"tags":[\#(tags.joined(separator: ","))],"labels":[\#(labels.joined(separator: ","))],"n":\#(round)}"#)
            }
            _ = try await fetcher.importSnapshots(
                source, files: [("r\(round).json", Array(#"{"results":[\#(items.joined(separator: ","))]}"#.utf8))],
                recordedAt: nil)
        }
        let tables = ItemTables(store: store)
        let head = try await store.head().seq
        var answered = 0
        for seq in 1...head {
            let scan = try await tables.items(source: "issues", asOf: seq)
            for path in ["tags", "labels.name"] {
                for name in names {
                    let expected = scan.filter { $0.document.values(atPath: path).contains(.string(name)) }.map(\.id)
                        .sorted { KeyedDocumentProjection.naturalKey($0).lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey($1)) }
                    guard let viaIndex = try await tables.items(source: "issues", path: path, equals: name, asOf: seq) else { continue }
                    #expect(Set(viaIndex.map(\.id)) == Set(expected) && viaIndex.count == expected.count, "seed \(seed), seq \(seq), \(path)=\(name)")
                    // No limit and an offset (what `list --where … --offset 2` asks): the rest of the keys.
                    let rest = try #require(try await tables.page(source: "issues", path: path, equals: name, asOf: seq, offset: 2, limit: .max))
                    #expect(rest.total == expected.count && rest.items.map(\.id) == Array(expected.dropFirst(2)), "seed \(seed), seq \(seq), \(path)=\(name)")
                    answered += 1
                }
            }
        }
        #expect(answered > 0)
        // Now: the counters and pages of the index equal the scan too.
        let now = try await tables.items(source: "issues")
        for path in ["tags", "labels.name"] {
            for name in names {
                let expected = now.filter { $0.document.values(atPath: path).contains(.string(name)) }.count
                let page = try #require(try await tables.page(source: "issues", path: path, equals: name, limit: 100))
                #expect(page.total == expected && page.items.count == expected, "seed \(seed), now, \(path)=\(name)")
            }
        }
        #expect(try await store.verify().ok)
    }
}
