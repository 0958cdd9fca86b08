import Foundation
import StrataDomain
import StrataJSON
import Testing

@testable import StrataWeb

/// The pages' rendering without a server: escaping, links from data, word diffs, the versions a
/// page holds.
@Suite struct WebPagesTests {
    let pages = try! WebPages()
    let chrome = WebPages.Chrome(title: "t", asOf: nil, nowLink: "/", json: "/j")

    func item(_ doc: JSONValue, title: String = "x") -> Item {
        Item(source: "s", id: "1", title: title, document: doc)
    }

    /// Every template is registered and renders its page.
    @Test func everyTemplateRenders() {
        for name in Templates.all.keys where name != "layout" && name != "changeList" {
            #expect(pages.render(name, chrome, [:]).contains("<main id=\"main\">"), "\(name)")
        }
        #expect(Set(Templates.all.keys).isSuperset(of: ["sources", "source", "item", "changes", "log", "schema", "alerts", "exchanges", "error"]))
    }

    /// No template skips the library's escaping: every value goes through `{{…}}`.
    @Test func noTemplateSkipsEscaping() {
        for (name, text) in Templates.all {
            #expect(!text.contains("{{{") && !text.contains("{{&") && !text.contains("{{ &"), "\(name)")
        }
    }

    @Test func valuesAreTextNeverMarkup() throws {
        let hostile = "<script>alert(1)</script>\"'&<img src=x onerror=alert(1)>"
        let html = pages.item(
            item: item(
                .object(["name": .string(hostile), "link": .string("javascript:alert(1)"), "home": .string("https://example.com/?a=<b>")]), title: hostile),
            history: .init(marks: [], versions: [:], page: HistoryPage(limit: WebPages.versionsPerPage)), compare: nil, chart: nil, asOf: nil, chrome: chrome)
        #expect(!html.contains("<script>alert") && !html.contains("<img src=x"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!html.contains("href=\"javascript:"), "a javascript: value is never a link")
        #expect(html.contains("href=\"https://example.com/?a=&lt;b&gt;\""), "an https value is a link, escaped")
        // The same in a version's changes: a value changed whole, and a long text word by word.
        let long = "a long text that stays mostly the same " + hostile
        let versions = [
            ItemVersion(version: 1, seq: 1, recordedAt: Date(timeIntervalSince1970: 1), kind: .added, document: .object([:])),
            ItemVersion(
                version: 2, seq: 2, recordedAt: Date(timeIntervalSince1970: 2), kind: .changed,
                changes: [
                    Change(kind: .replaced, path: "/<b>", old: .string(hostile), new: .string("<i>x</i>")),
                    Change(kind: .replaced, path: "/long", old: .string(long), new: .string(long + " <u>more</u>"))
                ], document: .object([:]))
        ]
        let changed = pages.item(
            item: item(.object([:])), history: ItemHistoryPage(versions, page: HistoryPage(limit: 50)), compare: nil, chart: nil, asOf: nil,
            chrome: chrome)
        #expect(!changed.contains("<script>alert") && !changed.contains("<img src=x") && !changed.contains("<i>x") && !changed.contains("<u>more"))
        #expect(changed.contains("&lt;b&gt;") && changed.contains("&lt;i&gt;x&lt;/i&gt;") && changed.contains("&lt;u&gt;more&lt;/u&gt;"))
    }

    /// A quote or an angle bracket followed by a combining mark is one `Character` in Swift, so
    /// an escaper that compares characters lets it through raw (swift-mustache's own does): an
    /// attribute's value could end there and an event handler follow. The pages escape by bytes.
    @Test func aCombiningMarkDoesNotHideAQuoteOrABracket() {
        let hostile = "x\"\u{301} autofocus onfocus=alert(1) x=\"<\u{301}script>"
        let html = pages.item(
            item: item(.object(["home": .string("https://example.com/" + hostile)]), title: hostile),
            history: .init(marks: [], versions: [:], page: HistoryPage(limit: WebPages.versionsPerPage)), compare: nil,
            chart: nil, asOf: nil,
            chrome: chrome)
        #expect(!html.contains("\"\u{301}") && !html.contains("<\u{301}"), "a quote or bracket with a combining mark went out raw")
        #expect(html.contains("&quot;\u{301} autofocus") && html.contains("&lt;\u{301}script&gt;"))
        #expect(WebEscaping().escapeText("a<b>&\"'c") == "a&lt;b&gt;&amp;&quot;&#39;c")
        #expect(WebEscaping().escapeText("plain ünïcödé") == "plain ünïcödé")
    }

    @Test func linksFromDataAreOnlyWeb() {
        for bad in [
            "javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "vbscript:x", "http://", "https://exa mple.com", "//evil.example",
            "http://a\u{0}b"
        ] {
            #expect(!Links.isWeb(bad), "\(bad)")
        }
        #expect(Links.isWeb("https://example.com/a?b=c") && Links.isWeb("HTTP://EXAMPLE.COM"))
    }

    @Test func timesAreUTCToTheSecond() {
        let f = ISO8601DateFormatter()
        for t in [0.0, 951_782_400, 1_767_225_599.9, 4_102_444_800, -86_401, 1_709_251_199] {
            let d = Date(timeIntervalSince1970: t)
            #expect(WebPages.iso(d) == f.string(from: Date(timeIntervalSince1970: t.rounded(.down))), "\(t)")
        }
        #expect(WebPages.time(Date(timeIntervalSince1970: 1_772_355_600)) == "2026-03-01 09:00:00 UTC")
    }

    @Test func controlCharactersBecomeSymbols() {
        #expect(WebPages.visible("a\u{1B}[31mb\u{07}\u{85}\nc") == "a\u{241B}[31mb\u{2407}\u{FFFD}\nc")
    }

    @Test func longTextsAreMarkedWordByWord() {
        let (old, new) = WordDiff.parts("the quick brown fox jumps over the lazy dog", "the quick red fox jumps over the dog")
        #expect(old == [.init(plain: "the quick ", marked: "brown "), .init(plain: "fox jumps over the ", marked: "lazy "), .init(plain: "dog")])
        #expect(new == [.init(plain: "the quick ", marked: "red "), .init(plain: "fox jumps over the dog")])
        // Words are split at any Unicode whitespace, kept byte for byte (a no-break space, an
        // ideographic space); a decomposed é is not the precomposed one.
        let (a, b) = WordDiff.parts("caf\u{E9}\u{A0}au lait\u{3000}x", "cafe\u{301}\u{A0}au lait\u{3000}x")
        #expect(a == [.init(plain: "", marked: "caf\u{E9}\u{A0}"), .init(plain: "au lait\u{3000}x")])
        #expect(b == [.init(plain: "", marked: "cafe\u{301}\u{A0}"), .init(plain: "au lait\u{3000}x")])
        #expect(WordDiff.words("a\u{2003}b\u{1F600} c") == ["a\u{2003}", "b\u{1F600} ", "c"])
    }

    /// Against a plain table over the whole texts: each side's parts give its text back, the
    /// words left unmarked are the same on both sides, and on one-line texts they are as many
    /// as the longest common subsequence has (the shared start and end are compared away first,
    /// never the answer). Texts of several lines are aligned line by line first, which may keep
    /// fewer.
    @Test func wordDiffsKeepTheTextsAndFindALongestCommonSubsequence() throws {
        var random = SystemRandomNumberGenerator()
        for vocabulary in [["a ", "b ", "c ", "d ", "e ", "f ", "g "], ["a ", "b ", "c ", "d ", "e\n", "f ", "g\n"]] {
            let oneLine = !vocabulary.contains { $0.hasSuffix("\n") }
            for _ in 0..<300 {
                let a = (0..<Int.random(in: 0...40, using: &random)).map { _ in vocabulary.randomElement(using: &random)! }
                var b = a
                for _ in 0..<Int.random(in: 0...6, using: &random) {
                    switch Int.random(in: 0...2, using: &random) {
                    case 0 where !b.isEmpty: b.remove(at: Int.random(in: 0..<b.count, using: &random))
                    case 1: b.insert(vocabulary.randomElement(using: &random)!, at: Int.random(in: 0...b.count, using: &random))
                    default: if !b.isEmpty { b[Int.random(in: 0..<b.count, using: &random)] = vocabulary.randomElement(using: &random)! }
                    }
                }
                let (old, new) = WordDiff.parts(a.joined(), b.joined())
                func text(_ pairs: [WordDiff.Pair]) -> String { pairs.map { $0.plain + ($0.marked ?? "") }.joined() }
                #expect(text(old) == a.joined() && text(new) == b.joined())
                func kept(_ pairs: [WordDiff.Pair]) -> [String] { pairs.flatMap { WordDiff.words($0.plain) } }
                #expect(kept(old) == kept(new), "\(a) → \(b)")
                guard oneLine else { continue }
                var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
                for i in stride(from: a.count - 1, through: 0, by: -1) {
                    for j in stride(from: b.count - 1, through: 0, by: -1) {
                        table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
                    }
                }
                // Past the shared start and end, a middle that differs in more words than its
                // limit is marked whole; else the kept words are a longest common subsequence.
                var head = 0, tail = 0
                while head < min(a.count, b.count), a[head] == b[head] { head += 1 }
                while tail < min(a.count, b.count) - head, a[a.count - 1 - tail] == b[b.count - 1 - tail] { tail += 1 }
                let n = a.count - head - tail, m = b.count - head - tail
                let fits = n + m - 2 * (table[0][0] - head - tail) <= WordDiff.limit(n, m)
                #expect(kept(old).count == (fits ? table[0][0] : head + tail), "\(a) → \(b)")
            }
        }
        // A paragraph rewritten among paragraphs kept: only its words are marked.
        let (before, after) = WordDiff.parts("one two\nthree four five\nsix\n", "one two\nthree 4 five\nsix\n")
        #expect(before == [.init(plain: "one two\nthree ", marked: "four "), .init(plain: "five\nsix\n")])
        #expect(after == [.init(plain: "one two\nthree ", marked: "4 "), .init(plain: "five\nsix\n")])
        // The edit script alone, on sequences that share little: its kept words are a longest
        // common subsequence, and deleting and inserting what it says turns one into the other.
        for _ in 0..<200 {
            let x = (0..<Int.random(in: 0...120, using: &random)).map { _ in Int32.random(in: 0..<5, using: &random) }
            let y = (0..<Int.random(in: 0...120, using: &random)).map { _ in Int32.random(in: 0..<5, using: &random) }
            let (gone, added) = try #require(WordDiff.edits(x, y, limit: x.count + y.count))
            let keptX = x.indices.filter { !gone.contains($0) }.map { x[$0] }, keptY = y.indices.filter { !added.contains($0) }.map { y[$0] }
            var table = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
            for i in stride(from: x.count - 1, through: 0, by: -1) {
                for j in stride(from: y.count - 1, through: 0, by: -1) {
                    table[i][j] = x[i] == y[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
                }
            }
            #expect(keptX == keptY && keptX.count == table[0][0], "\(x) → \(y)")
        }
        // Texts that differ in more words than the walk follows are marked whole.
        let many = (0..<600).map { "w\($0) " }.joined(), other = (0..<600).map { "v\($0) " }.joined()
        let (old, new) = WordDiff.parts("same " + many + "end", "same " + other + "end")
        #expect(old == [.init(plain: "same ", marked: many), .init(plain: "end")] && new == [.init(plain: "same ", marked: other), .init(plain: "end")])
    }

    /// A long text's unchanged runs are cut to the words around its changes; short ones stay.
    @Test func longUnchangedRunsAreCutToTheirContext() {
        let words = (0..<100).map { "w\($0) " }
        let old = words.joined() + "end", new = words[..<50].joined() + "NEW " + words[50...].joined() + "end"
        let (a, b) = WordDiff.parts(old, new)
        #expect(a.count == 1 && b.count == 2)
        let cut = WordDiff.elided(b, context: 3)
        #expect(cut == [.init(plain: "… w47 w48 w49 ", marked: "NEW "), .init(plain: "w50 w51 w52 …")])
        #expect(WordDiff.elided(a, context: 3) == [.init(plain: "w0 w1 w2 … w98 w99 end")], "a side without a change keeps its ends")
        let short = [WordDiff.Pair(plain: "a b ", marked: "c "), .init(plain: "d e f g h")]
        #expect(WordDiff.elided(short, context: 3) == short)
        let middle = [WordDiff.Pair(plain: "", marked: "x "), .init(plain: words.joined(), marked: "y "), .init(plain: "z")]
        #expect(WordDiff.elided(middle, context: 2)[1] == .init(plain: "w0 w1 … w98 w99 ", marked: "y "))
    }

    /// Versions whose changes are long texts: the page holds as many as fit its budget, and
    /// links the older ones from the oldest it shows.
    @Test func aPageOfLongChangesStaysSmall() {
        let report = (0..<400).map { "word\($0) " }.joined()
        let versions = (1...60).map { n in
            ItemVersion(
                version: n, seq: UInt64(n), recordedAt: Date(timeIntervalSince1970: Double(n)), kind: n == 1 ? .added : .changed,
                changes: n == 1 ? [] : [Change(kind: .replaced, path: "/report", old: .string("v\(n - 1) " + report), new: .string("new \(n) " + report))],
                document: .object(["report": .string(report)]))
        }
        let many = (1...60).map { n in
            ItemVersion(
                version: n, seq: UInt64(n), recordedAt: Date(timeIntervalSince1970: Double(n)), kind: n == 1 ? .added : .changed,
                changes: n == 1
                    ? []
                    : [
                        Change(
                            kind: .replaced, path: "/report", old: .string(String(repeating: "a", count: 3_000) + "\(n)"),
                            new: .string(String(repeating: "b", count: 3_000)))
                    ],
                document: .object([:]))
        }
        let small = pages.item(
            item: item(.object([:])), history: ItemHistoryPage(versions, page: HistoryPage(limit: 50)), compare: nil, chart: nil, asOf: nil, chrome: chrome)
        #expect(small.components(separatedBy: "<li id=\"v").count - 1 == 50, "a one-word change in a long text is its context, 50 fit")
        let html = pages.item(
            item: item(.object([:])), history: ItemHistoryPage(many, page: HistoryPage(limit: 50)), compare: nil, chart: nil, asOf: nil, chrome: chrome)
        let shown = html.components(separatedBy: "<li id=\"v").count - 1
        #expect(shown > 5 && shown < 50 && html.utf8.count < 140_000, "\(shown) versions, \(html.utf8.count) bytes")
        #expect(html.contains("href=\"/_strata/ui/sources/s/items/1?before=\(61 - shown)\""))
    }

    @Test func anItemShowsItsNewestVersionsAndLinksTheOlder() {
        let versions = (1...120).map { n in
            ItemVersion(
                version: n, seq: UInt64(n * 10), recordedAt: Date(timeIntervalSince1970: Double(n)), kind: n == 1 ? .added : .changed,
                changes: n == 1 ? [] : [Change(kind: .replaced, path: "/n", old: .int(n - 1), new: .int(n))], document: .object(["n": .int(n)]))
        }
        let html = pages.item(
            item: item(.object(["n": .int(120)])), history: ItemHistoryPage(versions, page: HistoryPage(limit: WebPages.versionsPerPage)), compare: nil,
            chart: ("n", versions), asOf: nil, chrome: chrome)
        #expect(html.components(separatedBy: "<li id=\"v").count - 1 == 50)
        #expect(html.contains("id=\"v1200\"") && html.contains("id=\"v710\"") && !html.contains("id=\"v700\""))
        #expect(html.contains("href=\"/_strata/ui/sources/s/items/1?before=710\""))
        #expect(html.contains("<polyline points=\""), "the chart of n")
        let page = HistoryPage(before: 710, limit: WebPages.versionsPerPage)
        let older = pages.item(
            item: item(.object(["n": .int(120)])), history: ItemHistoryPage(versions, page: page), compare: nil, chart: nil, asOf: nil,
            chrome: chrome)
        #expect(older.contains("id=\"v700\"") && older.contains("id=\"v210\"") && !older.contains("id=\"v710\""))
        // The page picks the versions it shows, and those in force at a comparison's ends.
        #expect(page.chosen(among: versions.map(\.seq)) == Set((21...70).map { UInt64($0 * 10) }))
        #expect(HistoryPage(limit: 2, at: [15, 5, 1_000]).chosen(among: [10, 20, 30, 40]) == [10, 30, 40])
    }
}
