@testable import EventStore
import Foundation
import LMDB
import Testing

/// A list item's versions from large pages: once its row closes, the item history keeps each as
/// the slice of its page's body it came from (``PayloadSlice``), not a copy. Every version still
/// reads back, as of any seq, in a plain and an encrypted store, a rebuild writes the same rows,
/// and an erasure that rewrites the pages folds the slices again.
@Suite struct PayloadSliceTests {
    /// Pages of `items`, each item `{"id":…}`, with a padding member that makes the page large
    /// (or not); most pretty-printed as scrapers print them (stored minified: codec 5), some not.
    static func pages(count: Int, keys: Int, padding: Int) -> [NewEvent] {
        typealias Value = JSONLayoutTests.Value
        return (0..<count).map { v in
            let items = (0..<keys).compactMap { k -> Value? in
                // Key 3 leaves for a while (its row closes), then comes back.
                if k == 3 && (20..<24).contains(v) { return nil }
                // Most keys change every page; key 5 every tenth.
                let n = k == 5 ? v / 10 : v
                return .object([("id", .text("k\(k)")), ("name", .text("item \(k)")), ("n", .number(n)), ("note", .text("changed at \(n)"))])
            }
            let page = Value.object([("items", .list(items)), ("pad", .text(String(repeating: "x", count: padding)))])
            // The slices are of the form the log stores: the minified text of a pretty body.
            let body = v % 7 == 3 ? page.compact : page.pretty()
            return NewEvent(type: "Page", stream: "p", metadata: [("collection", "c")], payload: bytes(body))
        }
    }

    /// Puts each item of a page as the slice of the page's form it is.
    static let projection = KeyedDocumentProjection(name: "documents", version: 1, eventTypes: ["Page"]) { event, ctx in
        guard let payload = try ctx.payload(of: event) else { return nil }
        let body = PayloadSlice.form(of: payload) ?? payload
        return try body.withUnsafeBytes { raw -> [DocumentOperation] in
            guard case .array(let ranges)? = try JSONSpans.container(atPath: "items", in: raw) else { return [] }
            let present = try ranges.map { r -> DocumentOperation in
                let text = UnsafeRawBufferPointer(rebasing: raw[r])
                guard case .string(let id)? = try JSONSpans.scalar(atPath: "id", in: text) else { throw DocumentError("no id") }
                let canonical = try JSONValue.canonicalize(text)
                return .putSlice(collection: "c", key: id, canonical: canonical, digest: Hashing.documentDigest(canonical), range: r)
            }
            let keys = Set(present.compactMap { if case let .putSlice(_, key, _, _, _) = $0 { key } else { nil } })
            return present + (0..<8).map { "k\($0)" }.filter { !keys.contains($0) }.map { .remove(collection: "c", key: $0) }
        }
    }

    /// For each closed row (in `history-packed`) and each open row (in `history`), whether each
    /// of its versions is kept as a slice.
    static func slicesByRow(_ store: EventStore) async throws -> (closed: [[Bool]], open: [[Bool]]) {
        let tables = try store.tables(of: "documents")
        return try await store.read { txn in
            func slices(_ row: KeyedDocumentProjection.HistoryRow) throws -> [Bool] {
                var out: [Bool] = []
                try row.forEach { at, record in
                    var r = ByteReader(record)
                    _ = try KeyedDocumentProjection.VersionHeader(reading: &r)
                    if case .slice = try KeyedDocumentProjection.DocumentSource(reading: &r, seq: at) { out.append(true) } else { out.append(false) }
                    return true
                }
                return out
            }
            var closed: [[Bool]] = [], open: [[Bool]] = []
            let packed = try txn.cursor(tables["history-packed"])
            var e = try packed.first()
            var numbers: [UInt64] = []
            while let entry = e {
                let number = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[..<8]))
                if number > 0, entry.key.count == 8 {
                    let count = try KeyedDocumentProjection.HistoryRow.blockCount(entry.value) ?? 1
                    numbers += (0..<UInt64(count)).map { number + $0 }
                }
                e = try packed.next()
            }
            for number in numbers { closed.append(try slices(KeyedDocumentProjection.HistoryRow(seq: 1, number: number, txn, tables))) }
            let history = try txn.cursor(tables["history"])
            e = try history.first()
            while let entry = e {
                if !KeyedDocumentProjection.HistoryRow.isPointer(entry.value) {
                    open.append(try slices(KeyedDocumentProjection.HistoryRow(key: entry.key, value: entry.value, txn, tables)))
                }
                e = try history.next()
            }
            return (closed, open)
        }
    }

    static func expectEveryVersion(_ store: EventStore, _ events: [NewEvent]) async throws {
        // What each key was after each page, from the pages themselves.
        for k in 0..<8 {
            let key = "k\(k)"
            var expected: [(seq: UInt64, document: JSONValue?)] = []
            for (i, event) in events.enumerated() {
                let page = try JSONValue(parsing: event.payload!)
                guard case .array(let items)? = page.value(atPath: "items") else { continue }
                let doc = items.first { $0.value(atPath: "id") == .string(key) }
                if expected.last.map({ $0.document != doc }) ?? (doc != nil) { expected.append((UInt64(i + 1), doc)) }
            }
            let history = try await store.documents { try $0.history(collection: "c", key: key) }
            #expect(history.map(\.seq) == expected.map(\.seq), "\(key)")
            for (version, want) in zip(history, expected) {
                if let doc = want.document {
                    #expect(!version.isRemoved && version.document == doc, "\(key) at \(version.seq)")
                } else {
                    #expect(version.isRemoved, "\(key) at \(version.seq)")
                }
            }
            for seq in stride(from: 1, through: UInt64(events.count), by: 3) {
                let state = try await store.documents { try $0.state(collection: "c", key: key, asOf: seq) }
                let want = expected.last { $0.seq <= seq }?.document
                #expect(state.map { $0.removed ? nil : $0.document } == want, "\(key) as of \(seq)")
            }
        }
    }

    @Test(arguments: [false, true]) func versionsOfClosedRowsAreSlicesOfTheirPages(encrypted: Bool) async throws {
        let dir = makeTempDir()
        var options = testOptions()
        if encrypted { options.key = StoreKey.generate() }
        let store = try await EventStore.open(at: dir, projections: [Self.projection], options: options)
        let events = Self.pages(count: 90, keys: 8, padding: 40_000)
        for batch in stride(from: 0, to: events.count, by: 9) { _ = try await store.append(Array(events[batch..<batch + 9])) }

        // Rows of 32 versions closed (and key 3's, closed by its removal): their versions are
        // slices, but the ones a removal repeats of a version before the page (none here).
        let rows = try await Self.slicesByRow(store)
        let closed = rows.closed.joined()
        #expect(closed.count > 150 && closed.allSatisfy { $0 }, "\(closed.filter { $0 }.count) of \(closed.count) closed versions are slices")
        // Open rows keep their last version whole and the ones before it as slices.
        #expect(rows.open.joined().filter { $0 }.count > 50 && rows.open.allSatisfy { $0.last == false }, "\(rows.open)")
        try await Self.expectEveryVersion(store, events)
        #expect(try await store.verify().ok)
        if encrypted {
            // The item text lives in the log's sealed bodies only.
            let file = try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb"))
            #expect(file.range(of: Data("changed at 12".utf8)) == nil)
        }
    }

    @Test func smallPagesKeepTheirVersions() async throws {
        let store = try await openStore(projections: [Self.projection])
        let events = Self.pages(count: 70, keys: 8, padding: 10)
        _ = try await store.append(events)
        let rows = try await Self.slicesByRow(store)
        #expect(rows.closed.joined().count > 100 && !(rows.closed + rows.open).joined().contains(true))
        try await Self.expectEveryVersion(store, events)
    }

    @Test func anErasureFoldsTheSlicesAgain() async throws {
        let store = try await openStore(projections: [Self.projection])
        var events = Self.pages(count: 70, keys: 8, padding: 40_000)
        _ = try await store.append(events)
        // Page 10 loses its padding and key 0 (its other items move in the body).
        let original = events[9].payload!
        var page = try JSONValue(parsing: original)
        guard case .object(var members) = page, case .array(let items)? = page.value(atPath: "items") else { Issue.record("no page"); return }
        members["items"] = .array(Array(items.dropFirst()))
        members["pad"] = .string("")
        page = .object(members)
        let rewritten = page.canonicalBytes
        let rewrite = BodyRewrite(original: Hashing.sha256(original), content: rewritten)
        // The erasure names what it rewrites, as `verify` asks.
        let record = JSONValue.object(["rewrites": EventStore.rewriteRecord([rewrite])])
        let by = try await store.append(NewEvent(type: "Erased", stream: "e", payload: Array(record.canonicalBytes))).seq
        #expect(try await store.rewriteBodies([rewrite], by: by) == 1)
        events[9] = NewEvent(type: "Page", stream: "p", metadata: [("collection", "c")], payload: rewritten)
        try await Self.expectEveryVersion(store, events)
        #expect(try await store.verify().ok)
    }
}
