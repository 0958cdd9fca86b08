import Foundation
import StrataBrowser
import StrataDomain
import StrataPresentation
import TestScratch
import Testing
import TerminalUI

/// Golden screens: every screen of the browser at 40×12, 80×24 and 120×40, in colour (thumbnails
/// drawn, their cells coloured) and without (`NO_COLOR`: no thumbnails, monochrome theme), as text
/// plus a style map of roles. Regenerate after a deliberate change with
/// `STRATA_UPDATE_GOLDENS=1 swift test --filter BrowserGoldenTests`, then read the diff.
@Suite struct BrowserGoldenTests {
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")
    static let sizes = [Size(columns: 40, rows: 12), Size(columns: 80, rows: 24), Size(columns: 120, rows: 40)]

    static let source = SourceViewData(
        name: "cars", url: "http://api.example/cars", freshness: .fetched(at: "2026-01-01 01:00:00Z", seq: 12),
        indexedFields: ["make", "fuel"])

    /// A thumbnail as chafa draws one: coloured half blocks.
    static let thumb = ["\u{1B}[38;2;200;30;30;48;2;20;20;90m▀▄▀▄\u{1B}[0m", "\u{1B}[38;5;33m████\u{1B}[0m"]

    static func row(
        _ id: String, _ title: String, _ make: String, _ price: Int, fuel: String = "petrol", seq: UInt64 = 3, removed: Bool = false,
        thumbnail: Bool = false
    ) -> BrowserState.Row {
        BrowserState.Row(
            item: ItemRowViewData(
                id: id, title: title, subtitle: "\(make) · \(price)", fields: [make, fuel],
                picture: "-", thumbnail: thumbnail ? thumb : nil, isRemoved: removed), changedSeq: seq)
    }

    static func list() -> BrowserState {
        var s = BrowserState()
        s.screen = .list
        s.source = "cars"
        s.sourceData = source
        s.columns = ["make", "fuel"]
        s.hasImages = true
        s.head = 12
        s.rows = [
            row("1", "Passat", "Volkswagen", 11500, thumbnail: true), row("2", "Yaris", "Toyota", 8750, fuel: "hybrid", seq: 11),
            row("3", "RAV4", "Toyota", 12300, thumbnail: true), row("4", "カローラ ツーリング", "トヨタ", 13750),
            row("5", "Niro 🚗 EV", "Kia", 19100, fuel: "electric")
        ]
        s.total = 5
        s.cursor = 1
        s.timeline = [1, 2, 5, 9, 11, 12].map {
            BrowserState.Mark(seq: $0, type: $0 == 9 ? "FetchFailed" : "CollectionPageFetched", isFailure: $0 == 9, time: "2026-01-01 00:00:0\($0 % 10)Z")
        }
        return s
    }

    static let scenes: [(String, BrowserState)] = {
        var sources = BrowserState()
        sources.head = 12
        sources.sources = [
            BrowserState.SourceRow(source: source, items: 5, lastFetch: "fetched 2026-01-01 01:00:00Z", failed: false, age: "1h"),
            BrowserState.SourceRow(
                source: SourceViewData(name: "notes", url: "http://api.example/notes", freshness: .never), items: 0,
                lastFetch: "failed 2026-01-01 02:00:00Z: HTTP 500", failed: true, age: "-")
        ]
        var popup = list()
        popup.popup = BrowserState.Popup(
            title: "Refresh failed", message: "HTTP 500 from http://api.example/cars?page=1 (the server's error)",
            hint: "The stored data is still shown. Enter closes this; r tries again.")
        popup.status = "refresh failed; showing stored data"
        var past = list()
        past.point = 11
        past.newEvents = 2
        past.rows[3].item.isRemoved = true
        past.status = "as of seq 11 · CollectionPageFetched · 2026-01-01 00:00:01Z"
        var detail = past
        detail.screen = .detail
        detail.detailID = "2"
        detail.detail = ItemDetailViewData(
            source: source, id: "2", title: "Yaris", subtitle: "Toyota · 8750", status: "v2 · first seen seq 4 · changed seq 11",
            fields: [
                LabeledValue("id", "2"), LabeledValue("make", "Toyota"), LabeledValue("model", "Yaris"),
                LabeledValue("price", "8750"), LabeledValue("seller.city", "Lyon")
            ],
            thumbnail: thumb, asOf: "seq 11")
        detail.changesAtPoint = [
            ChangeViewData(mark: .replaced, path: "/price", old: "9150", new: "8750"),
            ChangeViewData(mark: .removed, path: "/rating", old: "4.1")
        ]
        var busy = list()
        busy.isRefreshing = true
        busy.refreshProgress = "fetching cars…"
        var help = list()
        help.showHelp = true
        var filtering = list()
        filtering.prompt = BrowserState.Prompt(kind: .filter, text: "make=Toyota")
        // Writes: two items with staged edits (the bar), one pending row, the edit prompt open.
        var staged = list()
        staged.writes = BrowserState.Writes(create: true, edit: true, delete: true)
        staged.outbox = 1
        staged.rows[0].item.pending = "pending"
        staged.staging = BrowserState.Staging(
            session: "browse", changes: 3, items: 2,
            byID: [
                "2": [ChangeViewData(mark: .replaced, path: "/price", old: "8750", new: "8500")],
                "3": [
                    ChangeViewData(mark: .replaced, path: "/make", old: "Toyota", new: "Toyota Motor"),
                    ChangeViewData(mark: .removed, path: "/price", old: "12300")
                ]
            ])
        staged.prompt = BrowserState.Prompt(kind: .edit(id: "2"), text: "price=8500", choices: ["model=Yaris", "price=8750"], choice: 1)
        var stagedDetail = staged
        stagedDetail.prompt = nil
        stagedDetail.screen = .detail
        stagedDetail.detailID = "2"
        stagedDetail.detail = detail.detail
        stagedDetail.detail?.asOf = nil
        var question = list()
        question.popup = BrowserState.Popup(
            title: "Delete 2?", message: "2 · Yaris", hint: "y deletes it here at once (pending: P sends it); n keeps it.",
            question: .delete(ids: ["2"]))
        return [
            ("sources", sources), ("list", list()), ("popup", popup), ("past", past), ("detail", detail), ("refreshing", busy),
            ("help", help), ("prompt", filtering), ("staged", staged), ("staged-detail", stagedDetail), ("delete", question)
        ]
    }()

    @Test(arguments: 0..<scenes.count)
    func everyScreenAtEverySize(_ index: Int) throws {
        let (name, state) = Self.scenes[index]
        for size in Self.sizes {
            for color in [true, false] {
                let view = BrowserView(options: BrowserView.Options(thumbnail: color ? (columns: 4, rows: 2) : nil))
                let buffer = view.render(state, size: size)
                let text = (buffer.text + ["--- roles ---"] + buffer.styleMap).joined(separator: "\n") + "\n"
                let file = Self.goldens.appendingPathComponent("\(name)-\(size.columns)x\(size.rows)\(color ? "-color" : "").txt")
                try Golden.check(text, file: file)
                // Every row is exactly as wide as the terminal: nothing shifts the grid.
                for line in buffer.text { #expect(TextWidth.of(line) == size.columns, "\(file.lastPathComponent): \(line)") }
                // Without colour, nothing is drawn in colour, and meaning stays visible.
                if !color {
                    let bytes = String(decoding: FrameEncoder(theme: .monochrome).encode(previous: nil, next: buffer), as: UTF8.self)
                    #expect(Self.colourCodes(in: bytes).isEmpty, "\(file.lastPathComponent) draws colour")
                    #expect(!buffer.styleMap.joined().contains("*"))
                }
            }
        }
    }

    /// The SGR parameters that set a colour (30–49, 90–107) in `bytes`.
    static func colourCodes(in bytes: String) -> [Int] {
        var codes: [Int] = []
        var rest = bytes[...]
        while let start = rest.range(of: "\u{1B}[") {
            rest = rest[start.upperBound...]
            guard let end = rest.firstIndex(where: { $0.isLetter || $0 == "~" }) else { break }
            if rest[end] == "m" {
                codes += rest[..<end].split(separator: ";").compactMap { Int($0) }.filter { (30...49).contains($0) || (90...107).contains($0) }
            }
            rest = rest[end...]
        }
        return codes
    }

    @Test func theSelectedRowIsMarkedNotOnlyStyled() {
        let buffer = BrowserView().render(Self.list(), size: Size(columns: 80, rows: 24))
        #expect(buffer.text.contains { $0.hasPrefix("▶ ") && $0.contains("Yaris") })
        let ascii = BrowserView(options: BrowserView.Options(ascii: true)).render(Self.list(), size: Size(columns: 80, rows: 24))
        #expect(ascii.text.contains { $0.hasPrefix("> ") && $0.contains("Yaris") })
        // Borders, markers, the slider and the spinner in ASCII (the data's own text stays as it is).
        var past = Self.list()
        past.point = 9
        past.rows[0].item.isRemoved = true
        past.isRefreshing = true
        for screen in [Self.list(), past] {
            let text = BrowserView(options: BrowserView.Options(ascii: true)).render(screen, size: Size(columns: 120, rows: 40)).text.joined()
            #expect(!text.contains { "│─┌┐└┘▶◆✗●⠋▏".contains($0) && $0 != "▏" }, "\(text)")
        }
    }

    @Test func layoutsAreNarrowInPortraitAndSideBySideInLandscape() {
        let view = BrowserView()
        #expect(view.layout(Size(columns: 80, rows: 24), state: Self.list()).side == nil)
        let wide = view.layout(Size(columns: 120, rows: 40), state: Self.list())
        #expect(wide.side != nil && wide.content.width == 66)
        // Rows of two lines where thumbnails are drawn: 12 rows less the title, slider, status and header.
        #expect(view.layout(Size(columns: 40, rows: 12), state: Self.list()).listRows == 8)
        let pictures = BrowserView(options: BrowserView.Options(thumbnail: (columns: 4, rows: 2)))
        #expect(pictures.layout(Size(columns: 40, rows: 12), state: Self.list()).listRows == 4)
    }

    @Test func keysMapToCommandsOnTheScreenInFront() {
        let list = Self.list()
        #expect(KeyMap.command(for: KeyPress(.character("j")), in: list, canGoBack: true, page: 10) == .send(.move(1)))
        #expect(KeyMap.command(for: KeyPress(.character("q")), in: list, canGoBack: true, page: 10) == .send(.back))
        #expect(KeyMap.command(for: KeyPress(.character("q")), in: list, canGoBack: false, page: 10) == .quit)
        // Q quits from any screen, a popup or help in front included; typed into a prompt it is text.
        #expect(KeyMap.command(for: KeyPress(.character("Q")), in: list, canGoBack: true, page: 10) == .quit)
        #expect(KeyMap.command(for: KeyPress(.character("[")), in: list, canGoBack: true, page: 10) == .send(.step(-1)))
        #expect(KeyMap.command(for: KeyPress(.pageDown), in: list, canGoBack: true, page: 10) == .send(.move(10)))
        var popup = list
        popup.popup = BrowserState.Popup(title: "x", message: "y", hint: "z")
        #expect(KeyMap.command(for: KeyPress(.character("q")), in: popup, canGoBack: false, page: 10) == .send(.dismissPopup))
        #expect(KeyMap.command(for: KeyPress(.character("Q")), in: popup, canGoBack: true, page: 10) == .quit)
        var prompt = list
        prompt.prompt = BrowserState.Prompt(kind: .filter, text: "ma")
        #expect(KeyMap.command(for: KeyPress(.character("q")), in: prompt, canGoBack: true, page: 10) == .send(.editPrompt("maq")))
        #expect(KeyMap.command(for: KeyPress(.character("Q")), in: prompt, canGoBack: true, page: 10) == .send(.editPrompt("maQ")))
        #expect(KeyMap.command(for: KeyPress(.backspace), in: prompt, canGoBack: true, page: 10) == .send(.editPrompt("m")))
        #expect(KeyMap.command(for: KeyPress(.control("c"), ctrl: true), in: prompt, canGoBack: true, page: 10) == .quit)
        // Writes: n e d P on a source's screens; a and c only while edits are staged; Tab cycles an edit's fields.
        #expect(KeyMap.command(for: KeyPress(.character("n")), in: list, canGoBack: true, page: 10) == .send(.beginCreate))
        #expect(KeyMap.command(for: KeyPress(.character("e")), in: list, canGoBack: true, page: 10) == .send(.beginEdit))
        #expect(KeyMap.command(for: KeyPress(.character("d")), in: list, canGoBack: true, page: 10) == .send(.beginDelete))
        #expect(KeyMap.command(for: KeyPress(.character("P")), in: list, canGoBack: true, page: 10) == .send(.push))
        #expect(KeyMap.command(for: KeyPress(.character("a")), in: list, canGoBack: true, page: 10) == nil)
        var staged = list
        staged.staging = BrowserState.Staging(session: "browse", changes: 1, items: 1)
        #expect(KeyMap.command(for: KeyPress(.character("a")), in: staged, canGoBack: true, page: 10) == .send(.acceptSession))
        #expect(KeyMap.command(for: KeyPress(.character("c")), in: staged, canGoBack: true, page: 10) == .send(.cancelSession))
        var editing = list
        editing.prompt = BrowserState.Prompt(kind: .edit(id: "2"), text: "model=Yaris", choices: ["model=Yaris", "price=8750"])
        #expect(KeyMap.command(for: KeyPress(.tab), in: editing, canGoBack: true, page: 10) == .send(.nextChoice(1)))
        #expect(KeyMap.command(for: KeyPress(.backTab), in: editing, canGoBack: true, page: 10) == .send(.nextChoice(-1)))
        var asking = list
        asking.popup = BrowserState.Popup(title: "Delete 2?", message: "", hint: "", question: .delete(ids: ["2"]))
        #expect(KeyMap.command(for: KeyPress(.character("y")), in: asking, canGoBack: true, page: 10) == .send(.answer(true)))
        #expect(KeyMap.command(for: KeyPress(.character("n")), in: asking, canGoBack: true, page: 10) == .send(.answer(false)))
        #expect(KeyMap.command(for: KeyPress(.enter), in: asking, canGoBack: true, page: 10) == nil, "Enter does not delete")
    }
}
