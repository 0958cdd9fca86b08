@testable import EventStore
import Foundation
import LMDB
import Testing

/// Oracle tests: incremental projection == full rebuild == replay to the head, and an as-of read
/// at k == projecting only the first k events.
@Suite struct ProjectionOracleTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func incrementalEqualsRebuildEqualsReplay(seed: UInt64) async throws {
        let store = try await openStore()
        try await appendInBatches(generatedEvents(seed: seed, count: 400), to: store, seed: seed)
        let incremental = try await allStates(store)
        #expect(!incremental.isEmpty)

        let replayed = try await store.replay()
        defer { try? FileManager.default.removeItem(atPath: replayed.path) }
        #expect(try await allStates(replayed) == incremental)
        #expect(try await replayed.head() == store.head())

        try await store.rebuild()
        #expect(try await allStates(store) == incremental)

        let report = try await store.verify()
        #expect(report.ok, "\(report.problems) \(report.projections.map(\.differences))")
    }

    @Test(arguments: [11, 12] as [UInt64])
    func asOfEveryKEqualsProjectingTheFirstKEvents(seed: UInt64) async throws {
        let store = try await openStore()
        let events = generatedEvents(seed: seed, count: 160)
        try await appendInBatches(events, to: store, seed: seed)
        let head = try await store.head().seq
        var k: UInt64 = 0
        while k <= head {
            let prefix = try await store.replay(upTo: k)
            let expected = try await allStates(prefix).map(\.comparable)
            let asOf = try await allStates(store, asOf: k).map(\.comparable)
            #expect(asOf == expected, "as-of \(k) differs from the first \(k) events projected")
            // Histories truncated at k equal the prefix's full histories.
            for s in expected.prefix(3) {
                let (c, key, upTo) = (s.collection, s.key, k)
                let h1 = try await store.documents { try $0.history(collection: c, key: key, upTo: upTo) }
                let h2 = try await prefix.documents { try $0.history(collection: c, key: key) }
                #expect(h1 == h2)
            }
            try? FileManager.default.removeItem(atPath: prefix.path)
            k += 7
        }
    }

    @Test func historyRecordsFieldLevelChangesWithOldValues() async throws {
        let store = try await openStore()
        func put(_ id: String, _ doc: String) -> NewEvent {
            NewEvent(id: id, type: DocumentEvents.recorded, stream: "cars", metadata: [("collection", "cars"), ("key", "42")], payload: bytes(doc))
        }
        _ = try await store.append([
            put("1", #"{"make":"Ford","price":1000,"tags":["a"]}"#),
            put("2", #"{"make":"Ford","price":1000,"tags":["a"]}"#),  // unchanged: no version
            put("3", #"{"make":"Ford","price":900,"tags":["a","b"],"km":5}"#),
            NewEvent(id: "4", type: DocumentEvents.removed, stream: "cars", metadata: [("collection", "cars"), ("key", "42")]),
            put("5", #"{"make":"Ford","price":950}"#)
        ])
        let h = try await store.documents { try $0.history(collection: "cars", key: "42") }
        #expect(h.map(\.kind) == [.added, .changed, .removed, .reappeared])
        #expect(h.map(\.version) == [1, 2, 3, 4])
        #expect(h.map(\.seq) == [1, 3, 4, 5])
        #expect(
            h[1].changes == [
                PatchOperation(op: .add, path: "/km", value: .number("5")),
                PatchOperation(op: .replace, path: "/price", value: .number("900"), old: .number("1000")),
                PatchOperation(op: .add, path: "/tags/1", value: .string("b"))
            ])
        let lastBeforeRemoval = try JSONValue(parsing: #"{"make":"Ford","price":900,"tags":["a","b"],"km":5}"#)
        #expect(h[2].document == lastBeforeRemoval)
        #expect(h[3].changes.contains(PatchOperation(op: .remove, path: "/tags", old: .array([.string("a"), .string("b")]))))
        let now = try #require(try await store.documents { try $0.state(collection: "cars", key: "42") })
        #expect(now.version == 4 && now.firstSeq == 1 && now.changedSeq == 5 && now.lastSeenSeq == 5 && !now.removed)
        let atTwo = try #require(try await store.documents { try $0.state(collection: "cars", key: "42", asOf: 2) })
        let firstDoc = try JSONValue(parsing: #"{"make":"Ford","price":1000,"tags":["a"]}"#)
        #expect(atTwo.version == 1 && atTwo.document == firstDoc)
        let atFour = try #require(try await store.documents { try $0.state(collection: "cars", key: "42", asOf: 4) })
        #expect(atFour.removed)
        #expect(try await store.documents { try $0.state(collection: "cars", key: "42", asOf: 0) } == nil)
    }

    @Test(arguments: [21, 22] as [UInt64])
    func diffBetweenTwoPointsMatchesTheTwoAsOfStates(seed: UInt64) async throws {
        let store = try await openStore()
        try await appendInBatches(generatedEvents(seed: seed, count: 150), to: store, seed: seed)
        for (from, to) in [(0, 150), (20, 90), (60, 61), (100, 40)] as [(UInt64, UInt64)] {
            for collection in ["cars", "bikes"] {
                let diffs = try await store.documents { try $0.diff(collection: collection, from: from, to: to) }
                let before = Dictionary(
                    uniqueKeysWithValues: try await store.documents { try $0.states(collection: collection, asOf: from) }.map { ($0.key, $0.document) })
                let after = Dictionary(
                    uniqueKeysWithValues: try await store.documents { try $0.states(collection: collection, asOf: to) }.map { ($0.key, $0.document) })
                let changedKeys = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
                #expect(Set(diffs.map(\.key)) == changedKeys)
                for d in diffs {
                    #expect(d.before == before[d.key] && d.after == after[d.key])
                    if d.kind == .changed { #expect(try d.before!.applying(d.changes) == d.after!) }
                    if d.kind == .added { #expect(d.before == nil && d.changes.isEmpty) }
                }
            }
        }
    }

    @Test func snapshotsRemoveAbsentKeysAndReappearances() async throws {
        let store = try await openStore()
        func snap(_ id: String, _ body: String) -> NewEvent {
            NewEvent(id: id, type: DocumentEvents.snapshotRecorded, stream: "cars", metadata: [("collection", "cars")], payload: bytes(body))
        }
        _ = try await store.append([snap("1", #"{"a":{"v":1},"b":{"v":1}}"#), snap("2", #"{"a":{"v":1}}"#), snap("3", #"{"a":{"v":2},"b":{"v":1}}"#)])
        let present = try await store.documents { try $0.states(collection: "cars") }
        #expect(present.map(\.key) == ["a", "b"])
        let b = try await store.documents { try $0.history(collection: "cars", key: "b") }
        #expect(b.map(\.kind) == [.added, .removed, .reappeared])
        #expect(try await store.documents { try $0.states(collection: "cars", asOf: 2) }.map(\.key) == ["a"])
        #expect(try await store.documents { try $0.collections() } == ["cars"])
    }
}

@Suite struct ProjectionLifecycleTests {
    @Test func malformedEventsAreQuarantinedAndTheProjectionMovesOn() async throws {
        let store = try await openStore()
        let events = generatedEvents(seed: 77, count: 120, malformedEvery: 10)
        try await appendInBatches(events, to: store, seed: 77)
        let q = try await store.quarantined()
        #expect(q.count == 12)
        #expect(q.allSatisfy { $0.projection == "documents" && $0.reason.contains("malformed JSON") })
        // Good events in the same batches as bad ones were applied: the projection equals a rebuild
        // and its checkpoint is at the head.
        let report = try await store.verify()
        #expect(report.ok)
        #expect(report.quarantined.count == 12)
        let stats = try await store.stats()
        #expect(stats.projections[0].checkpoint == 120 && stats.projections[0].quarantined == 12)
        // An event missing its collection cannot be applied either.
        try await store.append(NewEvent(type: DocumentEvents.recorded, stream: "cars", metadata: [("key", "x")], payload: bytes("{}")))
        let q2 = try await store.quarantined(projection: "documents")
        #expect(q2.count == 13)
        #expect(q2.last!.reason.contains("collection"))
    }

    @Test func aProjectionWhoseVersionChangedIsRebuiltOnOpen() async throws {
        let dir = makeTempDir()
        do {
            let store = try await openStore(dir)
            try await appendInBatches(generatedEvents(seed: 5, count: 100), to: store, seed: 5)
        }
        // The next version keeps only the "cars" collection.
        let next = KeyedDocumentProjection().version + 1
        let carsOnly = KeyedDocumentProjection(version: next) { event, ctx in
            event[metadata: "collection"] == "cars" ? try DocumentEvents.operations(event, ctx) : nil
        }
        let store = try await openStore(dir, projections: [carsOnly])
        let stats = try await store.stats()
        #expect(stats.projections[0].storedVersion == next && stats.projections[0].checkpoint == 100)
        let colls = try await store.documents { try $0.collections() }
        #expect(colls == ["cars"])
        #expect(try await store.verify().ok)
    }

    @Test func anInterruptedRebuildResumesFromItsLastCommittedChunk() async throws {
        let dir = makeTempDir()
        let failAt = FailSwitch()
        let flaky = KeyedDocumentProjection { event, ctx in
            if failAt.seq == event.seq { throw StorageError(code: .io, message: "simulated crash") }
            return try DocumentEvents.operations(event, ctx)
        }
        var options = testOptions()
        options.catchUpChunk = 50
        let expected: [DocumentState]
        do {
            let store = try await EventStore.open(at: dir, projections: [flaky], options: options)
            try await appendInBatches(generatedEvents(seed: 8, count: 300), to: store, seed: 8)
            expected = try await allStates(store)
            failAt.seq = 230
            let seen = ProgressLog()
            await #expect(throws: (any Error).self) { try await store.rebuild(progress: { seen.add($0.applied) }) }
            #expect(seen.values.contains(200))
            #expect(try await store.stats().projections[0].checkpoint == 200)
        }
        failAt.seq = nil
        let seen = ProgressLog()
        let store = try await EventStore.open(at: dir, projections: [flaky], options: options) { seen.add($0.applied) }
        #expect(seen.values.first == 250)  // resumed after 200, not from zero
        #expect(try await allStates(store) == expected)
        #expect(try await store.verify().ok)
    }

    /// A catch-up folds every lagging projection in one pass, chunk by chunk, with the next chunk
    /// read ahead on another thread: projections at different checkpoints, with different type
    /// filters (one reading every type), and quarantined events end with the same tables as the
    /// append path builds (verify compares them byte for byte with a scratch replay).
    @Test(arguments: [1, 7, 64, 100_000])
    func aOnePassFoldWithReadAheadEqualsTheAppendPath(chunk: Int) async throws {
        let dir = makeTempDir()
        let everything = KeyedDocumentProjection(name: "everything", version: 1) { event, ctx in
            [.put(collection: "types", key: event.type, document: .object(["seq": .number(String(event.seq))]))]
        }
        let removals = KeyedDocumentProjection(name: "removals", version: 1, eventTypes: [DocumentEvents.removed]) { event, _ in
            guard event.type == DocumentEvents.removed else { throw DocumentError("handed a \(event.type)") }
            return [.put(collection: "removed", key: event[metadata: "key"]!, document: .string(event[metadata: "collection"]!))]
        }
        var options = testOptions()
        options.catchUpChunk = chunk
        let events = generatedEvents(seed: 21, count: 400, malformedEvery: 37)
        let expected: [DocumentState]
        do {
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
            try await appendInBatches(Array(events[..<250]), to: store, seed: 21)
        }
        do {
            // Two new projections start at 0 while documents is at 250; then documents alone is
            // rebuilt while the others are at the head.
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection(), everything, removals], options: options)
            try await appendInBatches(Array(events[250...]), to: store, seed: 22)
            expected = try await allStates(store)
            #expect(try await store.verify().ok)
            try await store.rebuild(["documents"])
            #expect(try await allStates(store) == expected)
            #expect(try await store.verify().ok)
            try await store.rebuild()
            #expect(try await allStates(store) == expected)
            let report = try await store.verify()
            #expect(report.ok, "\(report)")
            let stats = try await store.stats()
            #expect(stats.projections.allSatisfy { $0.checkpoint == 400 })
            // Only documents quarantines (the malformed bodies); removals was handed only its type.
            #expect(stats.projections.map(\.quarantined) == [400 / 37, 0, 0])
            let removed = try await store.documents(projection: "removals") { try $0.states(collection: "removed") }
            #expect(!removed.isEmpty)
        }
    }

    /// A chunk of at least 4,096 events that was not read ahead has its document bodies prepared
    /// on a helper thread (``BodyPrep``) while the writer folds it. The result must equal the
    /// append path's: with bodies shared by many events (read through the hash, not prepared),
    /// malformed bodies (quarantined), bodies over 64 KiB (left to the writer), more than one
    /// part of 2,048 seqs, and a second chunk read ahead once the helper is done.
    @Test(arguments: [100_000, 4_500])
    func aChunkWithBodiesPreparedAlongsideFoldsLikeTheAppendPath(chunk: Int) async throws {
        let dir = makeTempDir()
        var options = testOptions()
        options.catchUpChunk = chunk
        var events = generatedEvents(seed: 31, count: 6_000, malformedEvery: 53)
        let filler = String(repeating: "y", count: 70_000)
        for i in stride(from: 100, to: events.count, by: 1_000) {
            events[i] = NewEvent(
                id: "big\(i)", type: DocumentEvents.recorded, stream: "cars",
                metadata: [("collection", "cars"), ("key", "big\(i % 3)")], payload: Array("{\"f\":\"\(filler)\",\"i\":\(i)}".utf8))
        }
        let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
        for start in stride(from: 0, to: events.count, by: 500) { _ = try await store.append(Array(events[start..<min(events.count, start + 500)])) }
        let expected = try await allStates(store)
        let quarantined = try await store.stats().projections[0].quarantined
        #expect(quarantined == 6_000 / 53)
        try await store.rebuild(["documents"])
        #expect(try await allStates(store) == expected)
        let stats = try await store.stats()
        #expect(stats.projections[0].checkpoint == 6_000)
        #expect(stats.projections[0].quarantined == quarantined)
        let report = try await store.verify()
        #expect(report.ok, "\(report)")
    }

    @Test func unknownProjectionNamesAreRejected() async throws {
        let store = try await openStore()
        await #expect { try await store.rebuild(["nope"]) } throws: { ($0 as? EventStoreError)?.code == .unknownProjection }
    }
}

final class FailSwitch: @unchecked Sendable {
    private let lock = NSLock()
    private var _seq: UInt64?
    var seq: UInt64? {
        get { lock.lock(); defer { lock.unlock() }; return _seq }
        set { lock.lock(); _seq = newValue; lock.unlock() }
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _values: [UInt64] = []
    func add(_ v: UInt64) { lock.lock(); _values.append(v); lock.unlock() }
    var values: [UInt64] { lock.lock(); defer { lock.unlock() }; return _values }
}

/// The bytes `history` and `history-packed` store: keys and values (a solid row's values are
/// compressed, so its records read back larger than they are stored).
func storedHistoryBytes(_ txn: Transaction, _ tables: TableSet) throws -> Int {
    var total = 0
    for table in ["history", "history-packed"] {
        let c = try txn.cursor(tables[table])
        var e = try c.first()
        while let entry = e { total += entry.key.count + entry.value.count; e = try c.next() }
    }
    return total
}

/// The size of every version record in `history`, row by row (a keyframe's row holds its deltas;
/// a solid row's records as they read back, every document whole).
func versionSizes(_ txn: Transaction, _ tables: TableSet) throws -> [Int] {
    let c = try txn.cursor(tables["history"])
    var out: [Int] = []
    var e = try c.first()
    while let entry = e {
        let row = try KeyedDocumentProjection.HistoryRow(key: entry.key, value: entry.value, txn, tables)
        try row.forEach { _, record in
            out.append(record.count); return true
        }
        e = try c.next()
    }
    return out
}

@Suite struct DocumentStorageTests {
    /// A document lives once, in `history`: `current` holds bookkeeping and a digest, so a 16 KB
    /// document does not make a 16 KB current row, and repeating it writes no version.
    @Test func aDocumentIsStoredOnceAndARepeatIsAFewBytes() async throws {
        let store = try await openStore()
        let big = "{\"k\":1,\"blob\":\"" + String(repeating: "x", count: 16_000) + "\"}"
        func put(_ id: String, _ doc: String) -> NewEvent {
            NewEvent(id: id, type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", "a")], payload: bytes(doc))
        }
        _ = try await store.append([put("1", big), put("2", big), put("3", big.replacingOccurrences(of: "\"k\":1", with: "\"k\":2"))])
        let tables = try store.tables(of: "documents")
        let (currentBytes, versions) = try await store.read { txn in
            let row = try txn.get(tables["current"], key: Array("c\u{0}\u{1}a".utf8))
            return (row?.count ?? -1, try versionSizes(txn, tables).count)
        }
        #expect(currentBytes > 0 && currentBytes <= 48)
        #expect(versions == 2)
        let state = try #require(try await store.documents { try $0.state(collection: "c", key: "a") })
        #expect(state.version == 2 && state.lastSeenSeq == 3 && state.document.value(atPath: "k") == .number("2"))
        #expect(try await store.documents { try $0.changeKind(collection: "c", key: "a", at: 3) } == .changed)
        #expect(try await store.documents { try $0.changeKind(collection: "c", key: "a", at: 2) } == nil)
        #expect(try await store.verify().ok)
    }

    /// A version whose document is its event's whole payload keeps the payload's stored form
    /// from the log (compressed) instead of its canonical text: a few hundred bytes of history
    /// for a 16 KB document. That holds for a body another event stored (A, B, then A again
    /// dedupes to the first event's body) and for a removal (whose document is the last one
    /// before it); reads decode it, and a rebuild writes the same rows.
    @Test func aVersionOfAWholePayloadKeepsItsStoredForm() async throws {
        let store = try await openStore()
        func doc(_ n: Int) -> String { "{\"n\":\(n),\"blob\":\"" + String(repeating: "x", count: 16_000) + "\"}" }
        func put(_ id: String, _ key: String, _ text: String) -> NewEvent {
            NewEvent(id: id, type: DocumentEvents.recorded, stream: "s", metadata: [("collection", "c"), ("key", key)], payload: bytes(text))
        }
        _ = try await store.append([put("1", "a", doc(1)), put("2", "a", doc(2)), put("3", "b", doc(1)), put("4", "a", doc(1))])
        _ = try await store.append(NewEvent(id: "5", type: DocumentEvents.removed, stream: "s", metadata: [("collection", "c"), ("key", "a")]))
        let tables = try store.tables(of: "documents")
        let (rows, stored): ([Int], Int) = try await store.read { txn in (try versionSizes(txn, tables), try storedHistoryBytes(txn, tables)) }
        #expect(rows.count == 5 && stored < 5 * 400, "\(rows), \(stored) bytes stored")
        let history = try await store.documents { try $0.history(collection: "c", key: "a") }
        #expect(history.map(\.kind) == [.added, .changed, .changed, .removed])
        #expect(history.map { $0.document.value(atPath: "n") } == [.number("1"), .number("2"), .number("1"), .number("1")])
        #expect(history[1].changes.count == 1 && history[2].changes.count == 1)
        #expect(try await store.documents { try $0.state(collection: "c", key: "b")?.document } == (try JSONValue(parsing: doc(1))))
        #expect(try await store.documents { try $0.state(collection: "c", key: "a", asOf: 2)?.document.value(atPath: "n") } == .number("2"))
        #expect(try await store.verify().ok)
        // A rebuild reads the same documents through the same pointers.
        try await store.rebuild(["documents"])
        #expect(try await store.documents { try $0.history(collection: "c", key: "a") } == history)
    }

    /// Documents given as text (`putJSON`) keep an index in step like tree documents do, and a
    /// reordered but equal text is no change.
    @Test func indexesFollowDocumentsGivenAsText() async throws {
        let projection = KeyedDocumentProjection(name: "documents", version: 1) { event, ctx in
            if event.type == "Index" { return [.index(collection: "c", paths: ["color"])] }
            guard let body = try ctx.payload(of: event) else { return [.remove(collection: "c", key: event[metadata: "key"]!)] }
            return [.putJSON(collection: "c", key: event[metadata: "key"]!, json: body)]
        }
        let store = try await openStore(projections: [projection])
        func put(_ id: String, _ key: String, _ doc: String) -> NewEvent {
            NewEvent(id: id, type: "Put", stream: "s", metadata: [("key", key)], payload: bytes(doc))
        }
        _ = try await store.append([
            NewEvent(id: "0", type: "Index", stream: "s"),
            put("1", "a", #"{"color":"red","n":1}"#), put("2", "b", #"{"color":"red","n":2}"#),
            put("3", "a", #"{"n":1,"color":"red"}"#),  // same document, other order
            put("4", "b", #"{"color":"blue","n":2}"#),
            NewEvent(id: "5", type: "Remove", stream: "s", metadata: [("key", "a")])
        ])
        #expect(try await store.documents { try $0.keys(collection: "c", path: "color", equals: "red") } == [])
        #expect(try await store.documents { try $0.keys(collection: "c", path: "color", equals: "blue") } == ["b"])
        #expect(try await store.documents { try $0.history(collection: "c", key: "a") }.map(\.kind) == [.added, .removed])
        #expect(try await store.verify().ok)
    }

    /// A value's counter moves once per event: puts before and after an index (re)definition in
    /// the same event, a removal, and a document moving between values leave every counter equal
    /// to the value's entries, and a page's total equal to its keys, at every step and after a rebuild.
    @Test func indexCountersFollowEveryOperationOfAnEvent() async throws {
        let projection = KeyedDocumentProjection(name: "documents", version: 1) { event, _ in
            var ops: [DocumentOperation] = []
            for part in (event[metadata: "ops"] ?? "").split(separator: " ") {
                let f = part.split(separator: "=", maxSplits: 1).map(String.init)
                switch f[0] {
                case "index": ops.append(.index(collection: "c", paths: f.count > 1 ? f[1].split(separator: ",").map(String.init) : []))
                case "rm": ops.append(.remove(collection: "c", key: f[1]))
                default: ops.append(.put(collection: "c", key: f[0], document: .object(["color": .string(f[1])])))
                }
            }
            return ops
        }
        let store = try await openStore(projections: [projection])
        var n = 0
        func event(_ ops: String) -> NewEvent { n += 1; return NewEvent(id: "\(n)", type: "Ops", stream: "s", metadata: [("ops", ops)]) }
        func check(_ expected: [String: [String]], _ step: String) async throws {
            for color in ["red", "blue", "green"] {
                let page = try await store.documents { try $0.keyPage(collection: "c", path: "color", equals: color, limit: 100) }
                let keys = try await store.documents { try $0.keys(collection: "c", path: "color", equals: color) }
                #expect(page?.total == (expected[color] ?? []).count && page?.keys == (expected[color] ?? []) && keys == page?.keys, "\(step): \(color)")
            }
        }
        _ = try await store.append([event("1=red 2=red 10=blue index=color 3=red 2=blue")])
        try await check(["red": ["1", "3"], "blue": ["2", "10"]], "define mid-event")
        _ = try await store.append([event("3=green rm=1 4=red 1=red rm=4"), event("index=color 5=blue index=color")])
        try await check(["red": ["1"], "blue": ["2", "5", "10"], "green": ["3"]], "moves, removals, a definition repeated")
        _ = try await store.append([event("6=red index= 7=red index=color")])
        try await check(["red": ["1", "6", "7"], "blue": ["2", "5", "10"], "green": ["3"]], "dropped and defined again")
        #expect(try await store.verify().ok)
        try await store.rebuild()
        try await check(["red": ["1", "6", "7"], "blue": ["2", "5", "10"], "green": ["3"]], "after a rebuild")
    }

    /// The indexed paths are looked up once per batch: an index defined (or dropped) in the middle
    /// of a batch still applies to every put after it, and to the documents put before it.
    @Test func anIndexDefinedMidBatchAppliesToTheRestOfTheBatch() async throws {
        let projection = KeyedDocumentProjection(name: "documents", version: 1) { event, ctx in
            if event.type == "Index" { return [.index(collection: "c", paths: event[metadata: "paths"].map { [$0] } ?? [])] }
            return [.putJSON(collection: "c", key: event[metadata: "key"]!, json: try ctx.payload(of: event)!)]
        }
        let store = try await openStore(projections: [projection])
        func put(_ id: String, _ key: String, _ color: String) -> NewEvent {
            NewEvent(id: id, type: "Put", stream: "s", metadata: [("key", key)], payload: bytes(#"{"color":"\#(color)"}"#))
        }
        func keys(_ path: String, _ value: String) async throws -> [String] {
            try await store.documents { try $0.keys(collection: "c", path: path, equals: value) } ?? []
        }
        _ = try await store.append([
            put("1", "a", "red"),
            NewEvent(id: "2", type: "Index", stream: "s", metadata: [("paths", "color")]),
            put("3", "b", "red"), put("4", "a", "blue")
        ])
        #expect(try await keys("color", "red") == ["b"])
        #expect(try await keys("color", "blue") == ["a"])
        _ = try await store.append([
            NewEvent(id: "5", type: "Index", stream: "s"),
            put("6", "c", "red"),
            NewEvent(id: "7", type: "Index", stream: "s", metadata: [("paths", "color")]),
            put("8", "b", "green")
        ])
        #expect(try await keys("color", "red") == ["c"])
        #expect(try await keys("color", "green") == ["b"])
        #expect(try await keys("color", "blue") == ["a"])
        #expect(try await store.verify().ok)
    }
}

/// Every entry of the documents projection's tables, as stored.
func storedTables(_ store: EventStore, _ projection: String = "documents") async throws -> [String: [[UInt8]]] {
    let tables = try store.tables(of: projection)
    return try await store.read { txn in
        var out: [String: [[UInt8]]] = [:]
        for name in ["current", "history", "history-packed", "counts", "index", "index-history", "sorted", "indexes"] {
            let c = try txn.cursor(tables[name], raw: true)
            var e = try c.first()
            while let entry = e {
                out[name, default: []].append([UInt8](entry.key) + [0xEE] + [UInt8](entry.value))
                e = try c.next()
            }
        }
        return out
    }
}

@Suite struct HeldRowsTests {
    /// The built-in projection holds a key's open `history` row in the fold's memory and writes
    /// it (and the pointers of the rows it closed) at the end of the batch. What it stores must be
    /// byte for byte what a fold writing every row at once stores: one batch of everything, one
    /// event per batch, and a rebuild, over puts, removes, snapshots (their versions are deltas
    /// read back from the held rows), an index defined midway, and bodies stored as deltas of the
    /// previous version of their stream.
    @Test func aBatchStoresWhatEventByEventStores() async throws {
        var events = generatedEvents(seed: 77, count: 1_500)
        events.insert(NewEvent(id: "ix", type: "IndexDefined", stream: "cars", metadata: [("collection", "cars")], payload: bytes(#"["price"]"#)), at: 700)
        // Larger documents, the next version of one stream each: their bodies are stored as
        // deltas, so a version is not a whole stored form and is itself a delta against its keyframe.
        for v in 0..<120 {
            events.insert(
                NewEvent(
                    id: "list\(v)", type: DocumentEvents.recorded, stream: "lists",
                    metadata: [("collection", "lists"), ("key", "l\(v % 3)"), ("url", "http://api.test/l\(v % 3)")],
                    payload: DeltaChainTests.list(v / 3)), at: 12 * v)
        }
        let indexing = KeyedDocumentProjection(name: "documents", version: 11, eventTypes: DocumentEvents.types.union(["IndexDefined"])) { event, ctx in
            if event.type == "IndexDefined", let body = try ctx.payload(of: event), case .array(let paths) = try JSONValue(parsing: body) {
                return [.index(collection: event[metadata: "collection"]!, paths: paths.compactMap { if case .string(let p) = $0 { p } else { nil } })]
            }
            return try DocumentEvents.operations(event, ctx)
        }
        for projection in [KeyedDocumentProjection(), indexing] as [KeyedDocumentProjection] {
            let batch = try await EventStore.open(at: makeTempDir(), projections: [projection], options: testOptions())
            _ = try await batch.append(events)
            let single = try await EventStore.open(at: makeTempDir(), projections: [projection], options: testOptions())
            for e in events { _ = try await single.append([e]) }
            let expected = try await storedTables(single)
            #expect(expected["history-packed", default: []].count > 100)
            #expect(try await storedTables(batch) == expected)
            // Folded straight into the transaction: the careful path (a context per event) was
            // not what made the tables equal.
            #expect(await batch.writer.carefulFolds == 0)
            try await batch.rebuild(["documents"])
            #expect(await batch.writer.carefulFolds == 0)
            #expect(try await storedTables(batch) == expected)
            #expect(try await batch.verify().ok)
            #expect(try await allStates(batch) == (try await allStates(single)))
        }
    }
}
