import EventStore
import Foundation
import StrataData
import StrataAdapters
import StrataDomain
import Testing

@Suite struct MappingTests {
    let source = Source(
        name: "cars", url: "http://api.example/cars/offers", titlePath: "model", subtitlePaths: ["make", "price", "missing"],
        imagePath: "image", indexPaths: ["make", "specs.fuel"], hasDetails: true)

    @Test func dtoDecodesTheFixturePageAndMapsToItems() throws {
        let page = try ItemListPageDto(body: try fixture("cars/v1/offers.json"), url: "http://api.example/cars/offers", source: carsDefinition)
        #expect(page.items.count == 24)
        #expect(page.items.map(\.id) == (1...24).map(String.init))
        let item = Item(dto: page.items[2], source: source)
        #expect(item.id == "3")
        #expect(item.title == "RAV4")
        #expect(item.subtitle == ["Toyota", "12300"])
        #expect(item.fields == [Field(path: "make", value: "Toyota"), Field(path: "specs.fuel", value: "")])
        #expect(item.imageURL == "http://api.example/cars/images/3.png")
        let detail = try ItemDetailDto(id: "3", body: try fixture("cars/v1/offers/3.json"), url: "http://api.example/cars/offers/3")
        let full = item.with(detail: detail)
        #expect(full.value(atPath: "specs.fuel") == .string("hybrid"))
        #expect(Item(entity: ItemEntity(full), source: source).fields.last == Field(path: "specs.fuel", value: "hybrid"))
    }

    @Test func listPageDtoFollowsTheNextLinkAndRejectsBadBodies() throws {
        var def = carsDefinition
        def.next = "next"
        let page = try ItemListPageDto(body: Array(#"{"results":[{"id":1}],"next":"/cars/offers?page=2"}"#.utf8), url: "http://h/cars/offers", source: def)
        #expect(page.next == "http://h/cars/offers?page=2")
        #expect(throws: FetchError.self) { try ItemListPageDto(body: Array("{".utf8), url: "http://h", source: def) }
        #expect(throws: FetchError.self) { try ItemListPageDto(body: Array(#"{"results":[{"id":1},{"id":1}]}"#.utf8), url: "http://h", source: def) }
        #expect(throws: FetchError.self) { try ItemDetailDto(id: "1", body: Array("nope".utf8), url: "http://h/1") }
    }

    @Test func entityAndDomainRoundTrip() throws {
        let entity = ItemEntity(
            source: "cars", id: "7", version: 3, firstSeq: 2, changedSeq: 9, removed: true,
            document: try JSONValue(parsing: #"{"id":7,"model":"Golf","image":"https://cdn/x.png"}"#),
            detail: try JSONValue(parsing: #"{"make":"VW"}"#),
            image: ImageEntity(url: "https://cdn/x.png", sha256: String(repeating: "a", count: 64), size: 10, contentType: "image/png"))
        let item = Item(entity: entity, source: source)
        #expect(item.title == "Golf" && item.subtitle == ["VW"] && item.isRemoved && item.version == 3)
        #expect(item.imageURL == "https://cdn/x.png")
        #expect(ItemEntity(item) == entity)
        #expect(Item(entity: ItemEntity(item), source: source) == item)
    }

    @Test func titleFallsBackToTheIdAndContainersAreNotScalars() throws {
        let e = ItemEntity(source: "cars", id: "x", version: 1, firstSeq: 1, changedSeq: 1, document: try JSONValue(parsing: #"{"model":{"a":1},"make":null}"#))
        let item = Item(entity: e, source: source)
        #expect(item.title == "x")
        #expect(item.subtitle.isEmpty)
    }

    @Test(arguments: [PatchOperation.Op.add, .remove, .replace])
    func changesAndVersionsRoundTrip(op: PatchOperation.Op) throws {
        let patch = PatchOperation(op: op, path: "/price", value: op == .remove ? nil : .number("900"), old: op == .add ? nil : .number("1000"))
        let change = Change(patch: patch)
        #expect(PatchOperation(change) == patch)
        let entity = ItemVersionEntity(
            version: 2, seq: 14, recordedAt: Timestamp(microseconds: 1_767_225_600_000_000), kind: .changed,
            changes: [patch], document: .object(["price": .number("900")]), run: "r1", eventType: DataEvents.pageFetched)
        let version = ItemVersion(entity: entity)
        #expect(version.kind == .changed && version.changes == [change] && version.run == "r1")
        #expect(ItemVersionEntity(version) == entity)
    }

    @Test(arguments: StrataDomain.ChangeKind.allCases)
    func changeKindsRoundTrip(kind: StrataDomain.ChangeKind) {
        #expect(StrataDomain.ChangeKind(StoredChangeKind(kind)) == kind)
    }

    @Test func sourcesAndRunsMap() {
        let ok = FetchRunEntity(run: "r1", seq: 5, recordedAt: Timestamp(microseconds: 1_000_000), completed: true, complete: true, pages: 3, failures: 1)
        let bad = FetchRunEntity(run: "r2", seq: 9, recordedAt: Timestamp(microseconds: 2_000_000), completed: false, error: "HTTP 500")
        for e in [ok, bad] { #expect(FetchRunEntity(FetchRun(entity: e)) == e) }
        var def = carsDefinition
        def.detailURL = "http://h/cars/{id}"
        let s = Source(entity: SourceEntity(definition: def, lastRun: bad, lastSuccess: ok))
        #expect(s.name == "cars" && s.hasDetails && s.indexPaths == ["make", "model"])
        #expect(s.lastRun?.outcome == .failed("HTTP 500") && s.lastSuccess?.succeeded == true)
    }

    @Test func changeTouchesPathsAndPointers() {
        let c = Change(kind: .replaced, path: "/specs/km", old: .number("1"), new: .number("2"))
        #expect(c.touches("specs") && c.touches("specs.km") && c.touches("/specs/km"))
        #expect(!c.touches("spec") && !c.touches("price"))
    }
}

@Suite struct OrderTests {
    @Test func idsSortNaturally() {
        let ids = ["10", "b", "2", "a10", "1", "a9", "02"]
        #expect(ids.sorted(by: Item.idPrecedes) == ["1", "02", "2", "10", "a10", "a9", "b"])
    }
}
