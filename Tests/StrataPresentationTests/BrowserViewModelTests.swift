import Foundation
import StrataDomain
import StrataJSON
import StrataPresentation
import Testing

/// The browser's view model over in-memory repositories: given these commands, the state is
/// exactly this.
@MainActor
@Suite struct BrowserViewModelTests {
    static func repositories() -> MemoryRepositories {
        let r = Scene.repositories()
        r.entries = [1, 2, 5, 9, 12].map { seq in
            LogEntry(
                seq: seq, recordedAt: Scene.t0.addingTimeInterval(Double(seq)), type: seq == 9 ? "FetchFailed" : "CollectionPageFetched",
                stream: "cars", hash: String(repeating: "0", count: 64))
        }
        return r
    }

    static func make(_ r: MemoryRepositories) -> BrowserViewModel {
        BrowserViewModel(
            dependencies: .init(
                query: QueryItems(items: r, sources: r), refresh: RefreshSource(remote: r, sources: r),
                loadDetail: LoadItemDetail(items: r, sources: r, remote: r), history: GetItemHistory(items: r, sources: r),
                replay: ReplayLog(log: r), sources: r, items: r, now: { Scene.t0.addingTimeInterval(7200) }))
    }

    @Test func startsOnTheSourcesScreenAndOpensAList() async {
        let vm = Self.make(Self.repositories())
        vm.send(.start(source: nil, asOf: nil))
        await vm.settle()
        #expect(vm.state.screen == .sources)
        #expect(vm.state.sources.map(\.source.name) == ["cars"])
        #expect(vm.state.sources.first?.items == 3 && vm.state.sources.first?.age == "1h")
        #expect(vm.state.head == 12 && vm.state.isLive)
        #expect(!vm.canGoBack)
        vm.send(.open)
        await vm.settle()
        #expect(vm.state.screen == .list && vm.canGoBack)
        #expect(vm.state.rows.map(\.item.id) == ["2", "3", "4"])
        #expect(vm.state.total == 3 && vm.state.columns == ["make", "fuel"] && vm.state.hasImages)
        #expect(vm.state.timeline.map(\.seq) == [1, 2, 5, 9, 12])
        #expect(vm.state.timeline.map(\.isFailure) == [false, false, false, true, false])
        vm.send(.back)
        await vm.settle()
        #expect(vm.state.screen == .sources)
    }

    /// A reload that started before the user moved keeps the row the user moved to.
    @Test func aMoveDuringAReloadIsNotUndoneByIt() async {
        let r = Self.repositories()
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        #expect(vm.state.selectedRow?.item.id == "2")
        r.queryDelay = .milliseconds(200)
        vm.send(.headMoved(13))  // live: the list is read again, keeping "2" selected
        vm.send(.move(1))
        #expect(vm.state.selectedRow?.item.id == "3")
        await vm.settle()
        #expect(vm.state.selectedRow?.item.id == "3")
    }

    @Test func theCursorStaysInTheViewport() async {
        let vm = Self.make(Self.repositories())
        vm.send(.start(source: "cars", asOf: nil))
        vm.send(.viewport(rows: 2, wide: false))
        await vm.settle()
        vm.send(.bottom)
        #expect(vm.state.cursor == 2 && vm.state.top == 1)
        vm.send(.move(-5))
        #expect(vm.state.cursor == 0 && vm.state.top == 0)
        vm.send(.move(1))
        #expect(vm.state.cursor == 1 && vm.state.top == 0)
    }

    @Test func aDetailIsDownloadedThenReadFromTheStoreWithItsHistory() async throws {
        let r = Self.repositories()
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.open)
        #expect(vm.state.screen == .detail && vm.state.isDownloading)
        await vm.settle()
        #expect(r.detailRequests == ["2"])
        let detail = try #require(vm.state.detail)
        #expect(detail.id == "2" && detail.fields.contains { $0.label == "specs.km" && $0.value == "1200" })
        #expect(vm.state.history?.versions.map(\.seq) == [4, 11])
        #expect(!vm.state.isDownloading && vm.state.popup == nil)
        vm.send(.toggleHistory)
        #expect(vm.state.showHistory)
    }

    @Test func aFailedRefreshShowsAPopUpAndKeepsTheStoredRows() async throws {
        let r = Self.repositories()
        r.networkError = RepositoryError(.network, "HTTP 500 from http://api.example/cars; try again later")
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.refresh)
        #expect(vm.state.isRefreshing && vm.state.isBusy)
        await vm.settle()
        let popup = try #require(vm.state.popup)
        #expect(popup.title == "Refresh failed" && popup.message.contains("HTTP 500"))
        #expect(vm.state.rows.map(\.item.id) == ["2", "3", "4"] && !vm.state.isRefreshing)
        vm.send(.dismissPopup)
        #expect(vm.state.popup == nil)
        r.networkError = nil
        vm.send(.refresh)
        await vm.settle()
        #expect(vm.state.status == "fetched 1 page: 1 added, 2 changed, 0 removed" && r.refreshes == 2)
    }

    @Test func theSliderStepsThroughTheSourcesEventsAndBackToLive() async {
        let vm = Self.make(Self.repositories())
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.step(1))  // already live: nothing ahead
        #expect(vm.state.isLive)
        vm.send(.step(-1))
        await vm.settle()
        #expect(vm.state.point == 9 && vm.state.rows.map(\.item.id) == ["1", "2", "3"])
        vm.send(.step(-1))
        await vm.settle()
        #expect(vm.state.point == 5)
        vm.send(.step(-1)); await vm.settle()
        vm.send(.step(-1)); await vm.settle()
        #expect(vm.state.point == 1 && vm.state.rows.isEmpty)
        vm.send(.step(-1)); await vm.settle()
        #expect(vm.state.point == 1 && vm.state.status == "at the first event of cars")
        vm.send(.step(1)); await vm.settle()
        #expect(vm.state.point == 2)
        vm.send(.live); await vm.settle()
        #expect(vm.state.isLive && vm.state.rows.map(\.item.id) == ["2", "3", "4"])
        // Stepping forward past the last event returns to live.
        vm.send(.step(-1)); await vm.settle()
        #expect(vm.state.point == 9)
        vm.send(.step(1)); await vm.settle()
        #expect(vm.state.point == 12)
        vm.send(.step(1)); await vm.settle()
        #expect(vm.state.isLive)
    }

    @Test func jumpsBetweenAnItemsChangesAndShowsOldAndNewAtThePoint() async {
        let vm = Self.make(Self.repositories())
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.open)  // item 2
        await vm.settle()
        vm.send(.jumpToChange(forward: false))
        await vm.settle()
        #expect(vm.state.point == 11)
        #expect(vm.state.changesAtPoint.map(\.text) == ["~ /price: 9150 → 8750", "+ /tags: [\"new tyres\"]", "- /rating: 4.1"])
        vm.send(.jumpToChange(forward: false)); await vm.settle()
        #expect(vm.state.point == 4 && vm.state.changesAtPoint.isEmpty && vm.state.popup == nil)
        vm.send(.jumpToChange(forward: false)); await vm.settle()
        #expect(vm.state.point == 4 && vm.state.status == "no earlier change of 2")
        vm.send(.jumpToChange(forward: true)); await vm.settle()
        #expect(vm.state.point == 11)
    }

    @Test func anotherProcesssAppendsReloadLiveAndCountWhileInThePast() async {
        let r = Self.repositories()
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.move(2))
        r.snapshots.append((14, Scene.v2 + [Scene.car(5, "Kia", "Niro", 19100)]))
        vm.send(.headMoved(14))
        await vm.settle()
        #expect(vm.state.rows.map(\.item.id) == ["2", "3", "4", "5"] && vm.state.cursor == 2 && vm.state.head == 14)
        vm.send(.step(-1)); await vm.settle()
        r.snapshots.append((17, Scene.v2))
        vm.send(.headMoved(17))
        await vm.settle()
        #expect(vm.state.point == 12 && vm.state.newEvents == 3)
        #expect(vm.state.rows.map(\.item.id) == ["2", "3", "4"])
    }

    @Test func filterPromptAndTypedPoint() async {
        let vm = Self.make(Self.repositories())
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        vm.send(.beginPrompt(.filter))
        vm.send(.editPrompt("make=Toyota"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.rows.map(\.item.id) == ["2", "3"] && vm.state.filterText == "make=Toyota" && vm.state.usedIndex)
        vm.send(.beginPrompt(.point))
        vm.send(.editPrompt("5"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.point == 5)
        vm.send(.beginPrompt(.point))
        vm.send(.editPrompt("yesterday"))
        vm.send(.submitPrompt)
        await vm.settle()
        #expect(vm.state.popup?.title == "Not a point of the log" && vm.state.point == 5)
    }

    @Test func aReloadDeepInALongListReadsTheScreenAndRereadsRowsAboveWhenTheyComeIntoView() async throws {
        let old = (0..<300).map { Scene.car($0, "Kia", "Niro", 1000 + $0) }
        let new = (0..<300).map { Scene.car($0, "Kia", "Niro", 2000 + $0) }
        let r = Self.repositories()
        r.snapshots = [(5, old), (12, new)]
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        vm.send(.viewport(rows: 10, wide: false))
        await vm.settle()
        for _ in 0..<20 { vm.send(.move(10)); await vm.settle() }
        #expect(vm.state.cursor == 200 && vm.state.rows.count >= 210)
        vm.send(.step(-1))  // seq 9: the first snapshot's prices
        await vm.settle()
        #expect(vm.state.point == 9 && vm.state.cursor == 200)
        #expect(vm.state.selectedRow?.item.subtitle == "Kia · 1200" && vm.state.selectedRow?.stale == false)
        #expect(vm.state.rows[0].stale && vm.state.rows[0].item.subtitle == "Kia · 2000", "rows far above are kept, not read")
        #expect(vm.state.rows[vm.state.top...].prefix(10).allSatisfy { !$0.stale })
        vm.send(.top)
        await vm.settle()
        #expect(vm.state.cursor == 0 && vm.state.rows[0].item.subtitle == "Kia · 1000" && !vm.state.rows[0].stale)
        #expect(vm.state.rows.prefix(10).map(\.item.id) == (0..<10).map(String.init))
    }

    /// The failed download itself appends (a FetchFailed event): the head moving while the detail
    /// loads must not drop the download's outcome.
    @Test func aFailedDownloadsPopUpSurvivesTheHeadMovingMeanwhile() async throws {
        let r = Self.repositories()
        let vm = Self.make(r)
        vm.send(.start(source: "cars", asOf: nil))
        await vm.settle()
        r.networkError = RepositoryError(.network, "could not connect to 127.0.0.1:8099; is the API up?")
        vm.send(.open)
        vm.send(.headMoved(13))
        await vm.settle()
        let popup = try #require(vm.state.popup)
        #expect(popup.title == "Download failed" && popup.message.contains("could not connect"))
        #expect(vm.state.detail?.refreshError?.contains("could not connect") == true && vm.state.head == 13)
    }
}
