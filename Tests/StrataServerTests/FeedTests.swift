import FixtureServer
import Foundation
import StrataApp
import StrataDomain
import StrataTestSupport
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The Atom feed of a source's changes (`GET /_strata/feeds/SOURCE.atom`), parsed back with
/// Foundation's XMLParser and held to RFC 4287's required elements.
@Suite struct FeedTests {
    /// The elements of a feed: the feed's own children and each entry's.
    final class AtomReader: NSObject, XMLParserDelegate {
        var feed: [String: String] = [:]
        var entries: [[String: String]] = []
        var links: [String] = []
        private var path: [String] = []
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            path.append(name)
            text = ""
            if name == "entry" { entries.append([:]) }
            if name == "link", path.dropLast().last == "entry", let href = attributes["href"] { entries[entries.count - 1]["link"] = href }
            if name == "link", path.dropLast().last == "feed", let href = attributes["href"] { links.append(href) }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            let parent = path.dropLast().last
            if name != "link" {
                if parent == "entry" { entries[entries.count - 1][name] = text } else if parent == "feed" { feed[name] = text }
            }
            if name == "name", path.dropLast().last == "author" { feed["author"] = text }
            path.removeLast()
        }
    }

    static func read(_ xml: String) throws -> AtomReader {
        let reader = AtomReader()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = reader
        parser.shouldProcessNamespaces = true
        #expect(parser.parse(), "the feed is well-formed XML: \(parser.parserError.map { "\($0)" } ?? "")")
        return reader
    }

    @Test func aSourcesChangesAreAnAtomFeedNewestFirst() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            try await s.serving { (base: String) async throws in
                let r = try await s.get(base, "/_strata/feeds/cars.atom")
                #expect(r.status == 200 && r.header("Content-Type") == "application/atom+xml; charset=utf-8")
                let atom = try Self.read(r.text)
                // RFC 4287 4.1.1: a feed has an id, a title, an updated and an author (here for all entries).
                for required in ["id", "title", "updated", "author"] { #expect(atom.feed[required]?.isEmpty == false, "feed \(required)") }
                #expect(atom.links.contains("/_strata/feeds/cars.atom"), "links are relative to the feed's own address")
                #expect(!atom.entries.isEmpty)
                for e in atom.entries {
                    // 4.1.2: an entry has an id, a title and an updated; a text entry has content.
                    for required in ["id", "title", "updated", "content", "link"] { #expect(e[required]?.isEmpty == false, "entry \(required): \(e)") }
                    #expect(ISO8601DateFormatter.withFractions.date(from: e["updated"] ?? "") != nil, "RFC 3339 time: \(e["updated"] ?? "")")
                    #expect(e["link"]?.hasPrefix("/_strata/sources/cars/items/") == true)
                }
                // Newest first, ids unique and the same on the next read.
                let updated = atom.entries.compactMap { ISO8601DateFormatter.withFractions.date(from: $0["updated"] ?? "") }
                #expect(updated == updated.sorted(by: >))
                let ids = atom.entries.compactMap { $0["id"] }
                #expect(Set(ids).count == ids.count)
                #expect(try Self.read(try await s.get(base, "/_strata/feeds/cars.atom").text).entries.compactMap { $0["id"] } == ids)
                // A changed item's title says what changed, old → new.
                #expect(
                    atom.entries.contains { ($0["title"] ?? "").contains(" changed: ") && ($0["title"] ?? "").contains(" → ") }, "\(atom.entries.prefix(3))")
                // Its link answers the item.
                let item = try await s.get(base, atom.entries[0]["link"]!)
                #expect(item.status == 200)

                let two = try Self.read(try await s.get(base, "/_strata/feeds/cars.atom?limit=2").text)
                #expect(two.entries.count == 2 && two.entries.compactMap { $0["id"] } == Array(ids.prefix(2)))
                #expect(try await s.get(base, "/_strata/feeds/cars.atom?limit=0").status == 400)
                let unknown = try await s.get(base, "/_strata/feeds/nope.atom")
                #expect(unknown.status == 404 && unknown.text.contains("\"message\""))
                #expect(try await s.get(base, "/_strata/feeds/cars.rss").status == 404)
            }
        }
    }

    /// A feed answers as of a point like every other read: `as_of`, else the server's `--as-of`.
    /// Its entries are then the passes up to that point, never a later one.
    @Test func aFeedAsOfAPointListsOnlyTheChangesUpToIt() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let passes = try await s.app.useCases.replay(LogQuery(stream: "cars", type: "FetchCompleted", limit: 100, newestFirst: false)).map(\.seq)
            try #require(passes.count >= 3)
            let beforeLast = passes[passes.count - 1] - 1
            let (all, upTo) = try await s.serving { (base: String) async throws in
                let all = try Self.read(try await s.get(base, "/_strata/feeds/cars.atom").text).entries.compactMap { $0["id"] }
                let upTo = try Self.read(try await s.get(base, "/_strata/feeds/cars.atom?as_of=\(beforeLast)").text).entries.compactMap { $0["id"] }
                #expect(try Self.read(try await s.get(base, "/_strata/feeds/cars.atom?as_of=\(passes[0] - 1)").text).entries.isEmpty)
                return (all, upTo)
            }
            #expect(!upTo.isEmpty && upTo.count < all.count && Array(all.suffix(upTo.count)) == upTo, "\(upTo) within \(all)")
            let served = try await s.serving(asOf: .seq(beforeLast)) { (base: String) async throws in
                let feed = try Self.read(try await s.get(base, "/_strata/feeds/cars.atom").text).entries.compactMap { $0["id"] }
                let log = try await s.get(base, "/_strata/log?limit=10000")
                #expect(!log.text.contains("\"seq\": \(passes[passes.count - 1])") && !log.text.contains("\"seq\":\(passes[passes.count - 1])"))
                return feed
            }
            #expect(served == upTo)
        }
    }

    @Test func anAlertsNotificationsAreAnAtomFeed() async throws {
        try await withFixtureServer { fixture in
            let s = try await ServedStore.make(fixture)
            let hook = try #require(URL(string: "http://127.0.0.1:9/unused"))
            try await s.app.useCases.alerts.add(.init(source: "cars", name: "cheaper", kinds: ["changed"], fields: ["price"], target: .webhook(hook)))
            // Back to v1 after v3: the prices that moved are this alert's news.
            fixture.version = 1
            let pass = try await s.app.useCases.refresh("cars")
            #expect(pass.notificationsQueued > 0)
            try await s.serving { (base: String) async throws in
                let r = try await s.get(base, "/_strata/feeds/alerts/cars/cheaper.atom")
                #expect(r.status == 200 && r.header("Content-Type") == "application/atom+xml; charset=utf-8")
                let atom = try Self.read(r.text)
                for required in ["id", "title", "updated", "author"] { #expect(atom.feed[required]?.isEmpty == false, "feed \(required)") }
                #expect(atom.links.contains("/_strata/feeds/alerts/cars/cheaper.atom"))
                #expect(atom.entries.count == pass.notificationsQueued)
                for e in atom.entries {
                    for required in ["id", "title", "updated", "link"] { #expect(e[required]?.isEmpty == false, "entry \(required)") }
                    #expect((e["title"] ?? "").contains(" changed: price ") && (e["content"] ?? "").contains("notification ntf-"), "\(e)")
                    #expect(try await s.get(base, e["link"]!).status == 200)
                }
                let ids = atom.entries.compactMap { $0["id"] }
                #expect(Set(ids).count == ids.count && ids.allSatisfy { $0.hasPrefix("urn:strata:alert:cars:cheaper:ntf-") })
                #expect(try Self.read(try await s.get(base, "/_strata/feeds/alerts/cars/cheaper.atom").text).entries.compactMap { $0["id"] } == ids)
                #expect(try Self.read(try await s.get(base, "/_strata/feeds/alerts/cars/cheaper.atom?limit=1").text).entries.count == 1)
                let unknown = try await s.get(base, "/_strata/feeds/alerts/cars/nope.atom")
                #expect(unknown.status == 404 && unknown.text.contains("no alert nope on cars"))
            }
        }
    }
}

extension ISO8601DateFormatter {
    static var withFractions: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
