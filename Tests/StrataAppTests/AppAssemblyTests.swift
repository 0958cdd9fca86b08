import EventStore
import ChildProcess
import Foundation
import Logging
import StrataApp
import StrataData
import StrataAdapters
import StrataDomain
import StrataPresentation
import Swinject
import TerminalImages
import StrataTestSupport
import Testing

@Suite struct AppAssemblyTests {
    /// Every registration of every assembly resolves against a real temp store, and the
    /// container-scoped services are resolved once.
    @Test func everyRegistrationResolves() async throws {
        let store = try await makeStore()
        var configuration = AppConfiguration(userAgent: "Strata/test")
        configuration.thumbnails = .indexed256
        let resolver = StrataApp.assembler(store: store, configuration: configuration).resolver
        #expect(resolver.resolve(EventStore.self) === store)
        #expect(resolver.resolve((any HTTPClient).self) is CurlHTTPClient)
        #expect(resolver.resolve(Fetcher.self) === resolver.resolve(Fetcher.self))
        #expect(resolver.resolve(SourceCatalog.self) != nil)
        #expect(resolver.resolve(ItemTables.self) != nil)
        #expect(resolver.resolve((any EventLogRepository).self) is LMDBEventLogRepository)
        #expect(resolver.resolve((any SourceRepository).self) is LMDBSourceRepository)
        #expect(resolver.resolve((any ItemRepository).self) is LMDBItemRepository)
        #expect(resolver.resolve((any RemoteRepository).self) is CurlRemoteRepository)
        #expect(resolver.resolve(QueryItems.self) != nil)
        #expect(resolver.resolve(RefreshSource.self) != nil)
        #expect(resolver.resolve(LoadItemDetail.self) != nil)
        #expect(resolver.resolve(GetItemHistory.self) != nil)
        #expect(resolver.resolve(DiffCollection.self) != nil)
        #expect(resolver.resolve(ReplayLog.self) != nil)
        #expect(resolver.resolve(UseCases.self) != nil)
        #expect(resolver.resolve(LeaseSourceForWrite.self) != nil && resolver.resolve((any SourceLeaseRepository).self) != nil)
        #expect(resolver.resolve(ChildProcessRunner.self) != nil)
        let thumbs = try #require(resolver.resolve(ThumbnailSettings?.self))
        #expect(thumbs?.renderer is Thumbnailer && thumbs?.columns == 8)
        #expect(resolver.resolve(ViewModelFactory.self) != nil)
    }

    /// The assembled app serves a real read end to end: an empty store lists nothing.
    @Test @MainActor func assembledViewModelsWork() async throws {
        let store = try await makeStore()
        let app = StrataApp(store: store, configuration: AppConfiguration(userAgent: "Strata/test"))
        try await SourceCatalog(store: store).define(SourceDefinition(name: "cars", url: "http://127.0.0.1:1/cars", items: "results"))
        let list = app.viewModels.itemList(source: "cars", filter: FilterViewData(), inputs: .browser)
        await list.send(.load)
        #expect(list.state.content.value?.total == 0)
        let log = app.viewModels.eventLog()
        await log.send(.load(LogQuery()))
        #expect(log.state.content.value?.map(\.type) == ["SourceDefined"])
        let detail = app.viewModels.itemDetail(source: "cars", inputs: .browser)
        await detail.send(.open(id: "1", asOf: nil, offline: true))
        #expect(detail.state.content.error?.kind == .notFound)
        let history = app.viewModels.itemHistory(source: "cars", inputs: .browser)
        await history.send(.load(id: "1", upTo: nil, ignoring: []))
        #expect(history.state.content.error?.kind == .notFound)
        let diff = app.viewModels.collectionDiff(source: "cars", inputs: .browser)
        await diff.send(.compare(from: "0", to: nil, ignoring: []))
        #expect(diff.state.content.value?.items.isEmpty == true)
    }
}

@Suite struct ThumbnailerTests {
    let png = [UInt8](try! Data(contentsOf: URL(fileURLWithPath: fixturesRoot + "/cars/images/3.png")))

    @Test(arguments: [Thumbnailer.ColorMode.trueColor, .indexed256, .indexed16])
    func drawsAFixturePNGInExactlyTheCellsAsked(mode: Thumbnailer.ColorMode) throws {
        let rows = try #require(Thumbnailer(mode: mode).render(png, columns: 8, rows: 4))
        #expect(rows.count == 4)
        for row in rows {
            #expect(visibleWidth(row) == 8)
            #expect(!row.contains("\u{1B}") || row.hasSuffix("\u{1B}[0m") || row.hasSuffix(" "))
        }
        #expect(rows.joined().contains("\u{1B}["))
    }

    @Test func drawsAJPEG() throws {
        // A minimal valid JPEG: 1×1 grey, arithmetic-coded (125 bytes).
        let jpeg: [UInt8] = [
            0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x43, 0x00, 0x03, 0x02, 0x02, 0x02, 0x02, 0x02, 0x03, 0x02, 0x02, 0x02, 0x03, 0x03, 0x03, 0x03,
            0x04, 0x06, 0x04, 0x04, 0x04, 0x04, 0x04, 0x08, 0x06, 0x06, 0x05, 0x06, 0x09, 0x08, 0x0A, 0x0A, 0x09, 0x08, 0x09, 0x09, 0x0A,
            0x0C, 0x0F, 0x0C, 0x0A, 0x0B, 0x0E, 0x0B, 0x09, 0x09, 0x0D, 0x11, 0x0D, 0x0E, 0x0F, 0x10, 0x10, 0x11, 0x10, 0x0A, 0x0C, 0x12,
            0x13, 0x12, 0x10, 0x13, 0x0F, 0x10, 0x10, 0x10, 0xFF, 0xC9, 0x00, 0x0B, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x11, 0x00,
            0xFF, 0xCC, 0x00, 0x06, 0x00, 0x10, 0x10, 0x05, 0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00, 0xD2, 0xCF, 0x20,
            0xFF, 0xD9
        ]
        let rows = try #require(Thumbnailer(mode: .indexed256).render(jpeg, columns: 4, rows: 2))
        #expect(rows.count == 2 && rows.allSatisfy { visibleWidth($0) == 4 })
    }

    @Test func refusesWhatIsNotAnImageWithoutCrashing() {
        let t = Thumbnailer(mode: .trueColor)
        #expect(t.render([], columns: 8, rows: 4) == nil)
        #expect(t.render(Array("not an image".utf8), columns: 8, rows: 4) == nil)
        #expect(t.render(Array(png.prefix(40)), columns: 8, rows: 4) == nil)  // truncated PNG
        #expect(t.render([0xFF, 0xD8, 0xFF, 0xE0, 0, 0], columns: 8, rows: 4) == nil)  // truncated JPEG
        #expect(t.render(png, columns: 0, rows: 4) == nil)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var bytes = png
            for _ in 0..<4 { bytes[Int.random(in: 8..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            if let rows = t.render(bytes, columns: 6, rows: 3) { #expect(rows.count == 3) }
        }
    }

    @Test func colorModeFollowsTheEnvironment() {
        #expect(Thumbnailer.ColorMode(environment: ["COLORTERM": "truecolor", "TERM": "xterm"]) == .trueColor)
        #expect(Thumbnailer.ColorMode(environment: ["TERM": "xterm-direct"]) == .trueColor)
        #expect(Thumbnailer.ColorMode(environment: ["TERM": "screen-256color"]) == .indexed256)
        #expect(Thumbnailer.ColorMode(environment: ["TERM": "vt100"]) == .indexed16)
    }

    func visibleWidth(_ s: String) -> Int {
        var n = 0, esc = false
        for ch in s.unicodeScalars {
            if esc { if (0x40...0x7E).contains(ch.value) && ch != "[" { esc = false }; continue }
            if ch == "\u{1B}" { esc = true; continue }
            n += 1
        }
        return n
    }
}
