import Foundation
import StrataDomain
import StrataJSON
@testable import StrataPresentation
import Testing

@MainActor
@Suite struct ItemListViewModelTests {
    func make(_ r: MemoryRepositories, filter: FilterViewData = FilterViewData(), thumbnails: ThumbnailSettings? = nil) -> ItemListViewModel {
        ItemListViewModel(
            source: "cars", filter: filter, query: QueryItems(items: r, sources: r), refresh: RefreshSource(remote: r, sources: r),
            items: r, thumbnails: thumbnails)
    }

    @Test func loadPublishesLoadingThenLoaded() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        #expect(vm.state.content == .idle)
        var states: [ItemListViewModel.State] = []
        let updates = vm.updates()
        let collector = Task { @MainActor in
            for await s in updates {
                states.append(s)
                if case .loaded = s.content { break }
            }
        }
        await vm.send(.load)
        await collector.value
        #expect(states.map { $0.content.isLoading } == [false, true, false])
        let list = try #require(vm.state.content.value)
        #expect(list.rows.map(\.id) == ["2", "3", "4"])
        #expect(list.columns == ["make", "fuel"])
        #expect(list.total == 3 && list.asOf == nil)
    }

    @Test func filterAsOfPagingAndOpen() async throws {
        let r = Scene.repositories()
        let vm = make(r, filter: FilterViewData(limit: 2))
        await vm.send(.load)
        #expect(vm.state.content.value?.rows.count == 2)
        await vm.send(.nextPage)
        #expect(vm.state.filter.offset == 2 && vm.state.content.value?.rows.map(\.id) == ["4"])
        await vm.send(.nextPage)  // past the end: nothing changes
        #expect(vm.state.filter.offset == 2)
        await vm.send(.filter(FilterViewData(wheres: ["make=Toyota"])))
        #expect(vm.state.content.value?.rows.map(\.id) == ["2", "3"])
        #expect(vm.state.content.value?.usedIndex == true)
        await vm.send(.setAsOf("5"))
        #expect(vm.state.content.value?.asOf == "seq 5")
        #expect(vm.state.content.value?.rows.map(\.title) == ["Yaris", "RAV4"])
        await vm.send(.openDetail("3"))
        #expect(vm.state.openedItem == "3")
    }

    @Test func badInputAndUnknownSourceFailKeepingTheRows() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        await vm.send(.load)
        await vm.send(.filter(FilterViewData(wheres: ["nonsense"])))
        #expect(vm.state.content.error?.kind == .invalidInput)
        #expect(vm.state.content.value?.rows.count == 3)
        await vm.send(.setAsOf("yesterday-ish"))
        #expect(vm.state.content.error?.kind == .invalidInput)
        await vm.send(.filter(FilterViewData(asOf: "999")))
        #expect(vm.state.content.error?.kind == .invalidInput)
        let other = ItemListViewModel(source: "boats", query: QueryItems(items: r, sources: r), refresh: RefreshSource(remote: r, sources: r), items: r)
        await other.send(.load)
        #expect(other.state.content.error?.kind == .notFound)
        #expect(other.state.content.value == nil)
    }

    @Test func refreshSucceedsOrFailsAndKeepsShowingStoredData() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        await vm.send(.refresh(details: false, images: false))
        #expect(r.refreshes == 1 && !vm.state.isRefreshing)
        #expect(vm.state.refreshMessage == "fetched 1 page: 1 added, 2 changed, 0 removed")
        #expect(vm.state.content.value?.rows.count == 3)
        r.networkError = RepositoryError(.network, "HTTP 500 for the list")
        await vm.send(.refresh(details: true, images: true))
        #expect(vm.state.refreshMessage == "refresh failed: HTTP 500 for the list; showing stored data")
        #expect(vm.state.content.value?.rows.count == 3)
    }

    @Test func thumbnailsAreDrawnForStoredImagesOnly() async throws {
        let r = Scene.repositories()
        let vm = make(r, thumbnails: ThumbnailSettings(renderer: BoxRenderer(), columns: 4, rows: 2))
        await vm.send(.load)
        let rows = try #require(vm.state.content.value?.rows)
        #expect(rows.map { $0.thumbnail != nil } == [false, true, false])
        #expect(rows[1].thumbnail == ["####", "####"])
    }
}

@MainActor
@Suite struct ItemDetailViewModelTests {
    func make(_ r: MemoryRepositories) -> ItemDetailViewModel {
        ItemDetailViewModel(
            source: "cars", loadDetail: LoadItemDetail(items: r, sources: r, remote: r), items: r,
            thumbnails: ThumbnailSettings(renderer: BoxRenderer(), columns: 2, rows: 1))
    }

    @Test func openDownloadsThenShowsTheStoredDetail() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        var sawDownloading = false
        let updates = vm.updates()
        let watcher = Task { @MainActor in
            for await s in updates {
                if s.isDownloading { sawDownloading = true }
                if case .loaded = s.content { break }
            }
        }
        await vm.send(.open(id: "3", asOf: nil, offline: false))
        await watcher.value
        #expect(sawDownloading && !vm.state.isDownloading)
        #expect(r.detailRequests == ["3"])
        let d = try #require(vm.state.content.value)
        #expect(d.fields.contains(LabeledValue("specs.km", "1200")))
        #expect(d.fields.contains(LabeledValue("price", "12300")))  // from the list entry
        #expect(d.thumbnail == ["##"] && d.refreshError == nil && d.asOf == nil)
        await vm.send(.reload)
        #expect(r.detailRequests == ["3", "3"])
    }

    @Test func offlineAndAsOfNeverTouchTheNetwork() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        await vm.send(.open(id: "2", asOf: nil, offline: true))
        #expect(vm.state.content.value?.title == "Yaris" && !vm.state.isDownloading)
        await vm.send(.open(id: "2", asOf: "5", offline: false))
        #expect(vm.state.content.value?.asOf == "seq 5")
        #expect(vm.state.content.value?.subtitle == "Toyota · 9150")
        #expect(r.detailRequests.isEmpty)
    }

    @Test func failedDownloadKeepsTheStoredItemAndSaysWhy() async throws {
        let r = Scene.repositories()
        r.networkError = RepositoryError(.network, "HTTP 503 for the detail of 3")
        let vm = make(r)
        await vm.send(.open(id: "3", asOf: nil, offline: false))
        let d = try #require(vm.state.content.value)
        #expect(d.refreshError == "HTTP 503 for the detail of 3")
        #expect(d.title == "RAV4")
    }

    @Test func missingItemsAndBadPointsAreErrors() async throws {
        let r = Scene.repositories()
        let vm = make(r)
        await vm.send(.reload)  // nothing opened yet
        #expect(vm.state.content == .idle)
        await vm.send(.open(id: "1", asOf: nil, offline: true))
        #expect(vm.state.content.error?.kind == .notFound)
        await vm.send(.open(id: "1", asOf: "someday", offline: true))
        #expect(vm.state.content.error?.kind == .invalidInput)
        await vm.send(.open(id: "1", asOf: "5", offline: true))
        #expect(vm.state.content.value?.title == "Passat")
    }
}

@MainActor
@Suite struct HistoryDiffAndLogViewModelTests {
    @Test func historyLoadsIgnoresAndFails() async throws {
        let r = Scene.repositories()
        let vm = ItemHistoryViewModel(source: "cars", history: GetItemHistory(items: r, sources: r))
        await vm.send(.load(id: "2", upTo: nil, ignoring: []))
        let h = try #require(vm.state.content.value)
        #expect(h.versions.map(\.kind) == ["added", "changed"])
        #expect(h.versions[1].changes.map(\.text) == ["~ /price: 9150 → 8750", #"+ /tags: ["new tyres"]"#, "- /rating: 4.1"])
        #expect(h.versions[0].run == "0f1e2d3c")
        await vm.send(.ignore(["price", "tags", "rating"]))
        #expect(vm.state.content.value?.versions.count == 1)
        await vm.send(.load(id: "2", upTo: "5", ignoring: []))
        #expect(vm.state.content.value?.versions.count == 1)
        await vm.send(.load(id: "2", upTo: "never", ignoring: []))
        #expect(vm.state.content.error?.kind == .invalidInput)
        await vm.send(.load(id: "77", upTo: nil, ignoring: []))
        #expect(vm.state.content.error?.kind == .notFound)
    }

    @Test func diffComparesAndValidates() async throws {
        let r = Scene.repositories()
        let vm = CollectionDiffViewModel(source: "cars", diff: DiffCollection(items: r, sources: r), sources: r)
        await vm.send(.compare(from: "5", to: nil, ignoring: []))
        let d = try #require(vm.state.content.value)
        #expect(d.summary == "1 added, 1 changed, 1 removed, 0 reappeared")
        #expect(d.items.map(\.mark) == ["-", "~", "+"])
        await vm.send(.compare(from: "5", to: "12", ignoring: ["price"]))
        #expect(vm.state.content.value?.items.map(\.mark) == ["-", "+"])
        await vm.send(.compare(from: "12", to: "5", ignoring: []))
        #expect(vm.state.content.error?.kind == .invalidInput)
        await vm.send(.compare(from: "x", to: nil, ignoring: []))
        #expect(vm.state.content.error?.kind == .invalidInput)
        await vm.send(.compare(from: "5", to: "y", ignoring: []))
        #expect(vm.state.content.error?.kind == .invalidInput)
    }

    @Test func logLoadsAndPagesBack() async throws {
        let r = Scene.repositories()
        let vm = EventLogViewModel(replay: ReplayLog(log: r))
        await vm.send(.more)  // nothing loaded: no-op
        #expect(vm.state.content == .idle)
        await vm.send(.load(LogQuery(limit: 2)))
        #expect(vm.state.content.value?.map(\.seq) == [3, 2])
        #expect(vm.state.content.value?.first?.isFailure == true)
        await vm.send(.more)
        #expect(vm.state.content.value?.map(\.seq) == [1])
        await vm.send(.load(LogQuery(limit: 1, newestFirst: false)))
        await vm.send(.more)
        #expect(vm.state.content.value?.map(\.seq) == [2])
        await vm.send(.load(LogQuery(limit: 0)))
        #expect(vm.state.content.error?.kind == .invalidInput)
    }
}

@Suite struct PresentationMappingTests {
    @Test func filterTextAndQueryRoundTrip() throws {
        let f = FilterViewData(wheres: ["make=Toyota", "specs.fuel=a=b"], search: "yaris", sort: "-price", limit: 10, offset: 5, asOf: "42")
        let q = try ItemQuery(source: "cars", filter: f, naming: .browser)
        #expect(q.filters == [FieldFilter(path: "make", value: "Toyota"), FieldFilter(path: "specs.fuel", value: "a=b")])
        #expect(q.sort == ItemSort(path: "price", descending: true) && q.at == .seq(42))
        #expect(FilterViewData(query: q) == f)
        for bad in [
            FilterViewData(wheres: ["=x"]), FilterViewData(sort: "-"), FilterViewData(limit: 0), FilterViewData(offset: -1), FilterViewData(asOf: "soon")
        ] {
            #expect(throws: PresentableError.self) { try ItemQuery(source: "cars", filter: bad, naming: .browser) }
        }
    }

    @Test(arguments: ["2026-01-31", "2026-01-31T10:00:00Z", "2026-01-31T10:00:00.250Z", "2026-01-31T11:00:00+01:00"])
    func pointsParseDates(text: String) throws {
        guard case .date(let d) = try #require(PointInTime(text: text)) else { Issue.record("not a date"); return }
        #expect(d.timeIntervalSince1970 >= 1_769_817_600 && d.timeIntervalSince1970 < 1_769_904_000)
        let text = try #require(PointInTime.date(d).text)
        #expect(PointInTime(text: text) == .date(d))
    }

    @Test func pointsParseSeqsAndRejectTheRest() {
        #expect(PointInTime(text: "17") == .seq(17))
        #expect(PointInTime.seq(17).text == "17" && PointInTime.now.text == nil)
        #expect(PointInTime(text: "-1") == nil && PointInTime(text: "tomorrow") == nil && PointInTime(text: "") == nil)
    }

    @Test func changesRoundTripThroughViewData() {
        for c in [
            Change(kind: .replaced, path: "/price", old: .number("1"), new: .number("2")),
            Change(kind: .added, path: "/tags", new: .array([.string("a")])),
            Change(kind: .removed, path: "/name", old: .string("plain text"))
        ] {
            #expect(Change(viewData: ChangeViewData(change: c)) == c)
        }
    }

    @Test func stalenessSaysWhatHappened() {
        var s = Scene.source
        #expect(SourceViewData(source: s).stalenessText(.plain) == "cars: last fetched 2026-01-01 01:00:00Z (seq 12)")
        s.lastRun = FetchRun(id: "r3", seq: 20, at: Scene.t0.addingTimeInterval(7200), outcome: .failed("HTTP 500 for the list"))
        #expect(
            SourceViewData(source: s).stalenessText(.plain)
                == "cars: last fetch failed 2026-01-01 02:00:00Z: HTTP 500 for the list; showing data fetched 2026-01-01 01:00:00Z")
        s.lastSuccess = nil
        #expect(SourceViewData(source: s).stalenessText(.plain).hasSuffix("nothing stored yet"))
        s.lastRun = nil
        #expect(SourceViewData(source: s).stalenessText(.plain) == "cars: never fetched")
        let marked = FrontEndWording(inputs: .browser, field: \.rawValue, next: { "<\($0)>" })
        #expect(SourceViewData(source: s).stalenessText(marked) == "cars: never fetched; <fetch(source: \"cars\")>")
    }

    @Test func errorsMapToKinds() {
        #expect(PresentableError(RepositoryError(.notFound, "x")).kind == .notFound)
        #expect(PresentableError(RepositoryError(.invalidQuery, "x")).kind == .invalidInput)
        #expect(PresentableError(RepositoryError(.network, "x")).kind == .network)
        #expect(PresentableError(RepositoryError(.storage, "x")).kind == .storage)
        struct Other: Error {}
        #expect(PresentableError(Other()).kind == .storage)
    }

    @Test func jsonShapesCarryEverything() throws {
        let item = Scene.v1[2]
        guard case .object(let o) = JSONValue(item: item) else { Issue.record("not an object"); return }
        #expect(
            Set(o.keys) == [
                "source", "id", "title", "subtitle", "fields", "imageURL", "image", "version", "firstSeq", "changedSeq", "removed", "document", "detail",
                "pending", "conflicted"
            ])
        #expect(o["fields"] == .object(["make": .string("Toyota"), "fuel": .string("petrol")]))
        let v = ItemVersion(
            version: 2, seq: 9, recordedAt: Scene.t0, kind: .changed, run: "r", eventType: "E",
            changes: [Change(kind: .replaced, path: "/p", old: .number("1"), new: .number("2"))], document: .null)
        #expect(
            JSONValue(version: v).canonicalString
                == #"{"backfilled":false,"changes":[{"kind":"replaced","new":2,"old":1,"path":"/p"}],"document":null,"eventType":"E","kind":"changed","origin":"list","recordedAt":"2026-01-01T00:00:00.000Z","run":"r","seq":9,"version":2}"#
        )
        #expect(JSONValue(source: Scene.source).value(atPath: "lastRun.complete") == .bool(true))
        #expect(JSONValue(entry: Scene.repositories().entries[2]).value(atPath: "metadata.stage") == .string("detail"))
        #expect(JSONValue(diff: ItemDiff(id: "1", title: "t", kind: .removed, changes: [])).value(atPath: "kind") == .string("removed"))
    }
}

@Suite struct ISOTimeTests {
    /// The hand-written format is the formatter's, byte for byte, at microsecond times.
    @Test func writesWhatISO8601DateFormatterWrites() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var rng = SystemRandomNumberGenerator()
        var dates = [
            0, 0.0005, 0.9995, 0.999_999, 59.999_999, 86_399.999, 951_782_400, 1_767_225_599.999_999, 1_767_225_600, 4_102_444_799.999,
            -0.001, -1, -86_400.5
        ].map { Date(timeIntervalSince1970: $0) }
        for _ in 0..<100_000 {
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000_000, using: &rng)) / 1_000_000))
        }
        for d in dates { #expect(ISOTime.format(d) == f.string(from: d), "\(d.timeIntervalSince1970)") }
    }

    /// The screens' `2026-11-22 10:04:05Z` is what a UTC Gregorian Calendar gives: the second a
    /// time falls in, before 1970 too.
    @Test func screenTimesAreTheCalendarsSecond() {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        var rng = SystemRandomNumberGenerator()
        var dates = [0, 0.5, 0.999_999, 59.999, 951_782_400, 1_767_225_599.999, -0.001, -1, -86_400.5].map { Date(timeIntervalSince1970: $0) }
        for _ in 0..<2_000 {
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &rng)) / 1_000))
        }
        for d in dates {
            let c = cal.dateComponents([.year, .month, .day, .hour, .minute, .second], from: d)
            let expected = String(format: "%04d-%02d-%02d %02d:%02d:%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
            #expect(TimeText.format(d) == expected, "\(d.timeIntervalSince1970)")
        }
    }
}
