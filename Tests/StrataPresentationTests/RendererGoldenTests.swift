import Foundation
import StrataDomain
import StrataJSON
import StrataPresentation
import TestScratch
import Testing

/// Golden-text tests: every screen at widths 60 (narrow layout) and 160 (wide), with and without
/// colour, compared byte for byte with `Goldens/`. Regenerate after a deliberate change with
/// `STRATA_UPDATE_GOLDENS=1 swift test --filter RendererGoldenTests`, then read the diff.
@Suite struct RendererGoldenTests {
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")

    static let variants: [(width: Int, color: Bool)] = [(60, false), (60, true), (160, false), (160, true)]

    func check(_ name: String, _ render: (RenderOptions) -> String) throws {
        for v in Self.variants {
            let options = RenderOptions(width: v.width, color: v.color)
            let text = render(options)
            let file = Self.goldens.appendingPathComponent("\(name)-\(v.width)\(v.color ? "-color" : "").txt")
            try Golden.check(text, file: file)
            // Nothing but colour differs between the plain and the coloured text.
            if v.color { #expect(!text.contains("\u{1B}") || options.color) } else { #expect(!text.contains("\u{1B}")) }
            // No line is wider than the terminal.
            for line in text.split(separator: "\n") where !line.contains("#") {
                #expect(line.strippingANSI.count <= v.width, "\(file.lastPathComponent): \(line)")
            }
        }
    }

    var list: ItemListViewData {
        var l = ItemListViewData(
            source: Scene.source, page: ItemPage(items: Scene.v2 + [Scene.car(9, "Kia", "Ceed", 8000, removed: true)], total: 10, seq: nil), offset: 0)
        l.rows[0].subtitle = "Toyota · 8750 · a subtitle long enough to be cut when the terminal is narrow or the table is full"
        return l
    }

    @Test func itemList() throws {
        try check("list") { ItemListRenderer(options: $0).render(list) }
    }

    @Test func itemListWithThumbnailsAsOfAndRefreshError() throws {
        var l = list
        l.rows[1].thumbnail = ["####", "####"]
        l.asOf = "seq 5"
        l.usedIndex = true
        var failing = Scene.source
        failing.lastRun = FetchRun(id: "r3", seq: 20, at: Scene.t0.addingTimeInterval(7200), outcome: .failed("HTTP 500 for the list"))
        l.source = SourceViewData(source: failing)
        try check("list-thumbnails") { ItemListRenderer(options: $0).render(l, refreshMessage: "refresh failed: HTTP 500 for the list; showing stored data") }
    }

    @Test func emptyList() throws {
        let l = ItemListViewData(source: Scene.source, page: ItemPage(items: [], total: 0, seq: 3), offset: 0)
        try check("list-empty") { ItemListRenderer(options: $0).render(l) }
    }

    @Test func itemDetail() throws {
        var item = Scene.v2[1]
        item.detail = .object([
            "model": .string("RAV4"), "specs": .object(["km": .number("132000"), "fuel": .string("hybrid")]),
            "equipment": .array([.string("bluetooth"), .string("heated seats")]), "notes": .array([]),
            "description": .string(String(repeating: "A long description. ", count: 10))
        ])
        var d = ItemDetailViewData(source: Scene.source, item: item, asOf: nil, refreshError: "HTTP 503 for the detail of 3")
        d.thumbnail = ["##", "##"]
        try check("detail") { ItemDetailRenderer(options: $0).render(d) }
    }

    @Test func history() async throws {
        let r = Scene.repositories()
        let versions =
            try await r.history(source: "cars", id: "2", upTo: .now)
            + [ItemVersion(version: 3, seq: 30, recordedAt: Scene.t0.addingTimeInterval(9000), kind: .removed, run: nil, document: .null)]
        let h = HistoryViewData(source: Scene.source, id: "2", versions: versions)
        try check("history") { HistoryRenderer(options: $0).render(h) }
    }

    @Test func diff() async throws {
        let r = Scene.repositories()
        var d = try await r.diff(source: "cars", from: .seq(5), to: .now)
        d.items.append(
            ItemDiff(
                id: "9", title: "Ceed", kind: .reappeared,
                changes: [Change(kind: .replaced, path: "/description", old: .string(String(repeating: "old ", count: 30)), new: .string("new"))]))
        let data = DiffViewData(source: Scene.source, diff: d)
        try check("diff") { DiffRenderer(options: $0).render(data) }
        let empty = DiffViewData(source: Scene.source, diff: CollectionDiff(source: "cars", fromSeq: 5, toSeq: 5, items: []))
        try check("diff-empty") { DiffRenderer(options: $0).render(empty) }
    }

    @Test func eventLog() throws {
        let events = Scene.repositories().entries.reversed().map(EventViewData.init(entry:))
        try check("log") { EventLogRenderer(options: $0).render(Array(events)) }
        #expect(EventLogRenderer(options: RenderOptions(width: 100, color: false)).render([]) == "no events\n")
    }

    @Test func csvEscapesAndKeepsColumns() {
        let csv = CSVRenderer().render(list)
        let lines = csv.components(separatedBy: "\r\n")
        #expect(lines[0] == "id,title,subtitle,make,fuel,image,removed")
        #expect(
            lines[3]
                == "4,Octavia with a very long model name that will not fit a narrow terminal,Škoda · 13750,Škoda,petrol,http://api.example/cars/images/4.png,false"
        )
        #expect(
            CSVRenderer().render(
                ItemListViewData(source: SourceViewData(source: Scene.source), columns: [], rows: [ItemRowViewData(id: "1", title: "a, \"b\"\nc")], total: 1))
                == "id,title,subtitle,image,removed\r\n1,\"a, \"\"b\"\"\nc\",,,false\r\n")
    }
}

extension Substring {
    var strippingANSI: String {
        var out = ""
        var inEscape = false
        for ch in unicodeScalars {
            if inEscape { if (0x40...0x7E).contains(ch.value) && ch != "[" { inEscape = false }; continue }
            if ch == "\u{1B}" { inEscape = true; continue }
            out.unicodeScalars.append(ch)
        }
        return out
    }
}
