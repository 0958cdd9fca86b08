@testable import EventStore
import Foundation
import LMDB
import Testing

/// Closed history rows are stored solid (their versions as columns, every document whole, one
/// zstd frame), anchored rows against the anchor before them: every version, as-of read, change
/// kind and history reads back as it was written, a rebuild writes the same bytes, and a damaged
/// row is reported.
@Suite struct SolidHistoryRowTests {
    /// Forty keys changing in every snapshot (one of them absent for a while: removed, then back),
    /// 150 snapshots: two rows of 64 versions closed per key (``KeyedDocumentProjection/keyframeInterval``),
    /// about 80, so rows 1 and 65 are anchors and the rest anchored.
    static func snapshots() -> (events: [NewEvent], keys: [String], document: (_ key: Int, _ v: Int) -> String?) {
        func document(_ key: Int, _ v: Int) -> String? {
            if key == 1 && (40..<43).contains(v) { return nil }
            return "{\"id\":\(key),\"name\":\"item \(key)\",\"price\":\(100 + (v * (key + 3)) % 97),\"stock\":\(v % 13),"
                + "\"updated_at\":\"2026-11-26T\(10 + v / 60):\(String(format: "%02d", v % 60)):00Z\"}"
        }
        let base: Int64 = 1_764_000_000_000_000
        var events: [NewEvent] = []
        for v in 0..<150 {
            let members = (0..<40).compactMap { k in document(k, v).map { "\"k\(k)\":\($0)" } }
            // Whole seconds for most versions (imported histories), microseconds for some.
            let at = base + Int64(v) * 3_600_000_000 + (v % 10 == 7 ? 123_457 : 0)
            events.append(
                NewEvent(
                    type: DocumentEvents.snapshotRecorded, recordedAt: Timestamp(microseconds: at), stream: "s",
                    metadata: [("collection", "c")], payload: bytes("{" + members.joined(separator: ",") + "}")))
        }
        return (events, (0..<40).map { "k\($0)" }, document)
    }

    /// Every packed row, in number order: its number, and the first byte of the entry holding
    /// it (0 plain, 1 solid alone: waiting for its block, 3 in a block), that entry's key and
    /// its size. Number 0 (the waiting rows' count) is left out.
    static func packedRows(_ store: EventStore, _ tables: TableSet) async throws -> [(number: UInt64, mark: UInt8, entry: UInt64, size: Int)] {
        try await store.read { txn in
            var out: [(UInt64, UInt8, UInt64, Int)] = []
            let c = try txn.cursor(tables["history-packed"])
            var e = try c.first()
            while let entry = e {
                // A block's later chunks (9-byte keys) are part of the entry before them.
                let number = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[..<8]))
                if number > 0, entry.key.count == 8 {
                    let count = try KeyedDocumentProjection.HistoryRow.blockCount(entry.value) ?? 1
                    for i in 0..<count { out.append((number + UInt64(i), entry.value.first!, number, entry.value.count)) }
                }
                e = try c.next()
            }
            return out
        }
    }

    /// The mark of every packed row's entry, in number order (``packedRows(_:_:)``).
    static func packedMarks(_ store: EventStore, _ tables: TableSet) async throws -> [UInt8] {
        try await packedRows(store, tables).map(\.mark)
    }

    /// The rows waiting for their block, as number 0 counts them.
    static func pending(_ store: EventStore, _ tables: TableSet) async throws -> KeyedDocumentProjection.HistoryRow.Pending {
        try await store.read { txn in try KeyedDocumentProjection.HistoryRow.Pending(txn, tables["history-packed"]) }
    }

    @Test func everyVersionOfASolidRowReadsBack() async throws {
        let store = try await openStore()
        let (events, keys, document) = Self.snapshots()
        for batch in stride(from: 0, to: events.count, by: 10) { _ = try await store.append(Array(events[batch..<batch + 10])) }
        let tables = try store.tables(of: "documents")

        // Rows are numbered from 1 without a gap; the closed ones are in blocks of several rows,
        // but the last few, which wait for theirs as solid rows alone (as number 0 counts them).
        let rows = try await Self.packedRows(store, tables)
        #expect(rows.count > 65 && rows.map(\.number) == (1...UInt64(rows.count)).map { $0 }, "\(rows.count) packed rows")
        let waiting = try await Self.pending(store, tables)
        let blocked = rows.prefix { $0.mark == KeyedDocumentProjection.HistoryRow.blockMark }
        #expect(blocked.count + waiting.count == rows.count && waiting.count > 0, "\(rows.map(\.mark)) \(waiting)")
        #expect(rows.suffix(waiting.count).allSatisfy { $0.mark == KeyedDocumentProjection.HistoryRow.solidMark })
        let blocks = Set(blocked.map(\.entry)).count
        #expect(blocks > 1 && blocks * 8 < blocked.count, "\(blocks) blocks hold \(blocked.count) rows")
        // The blocks follow each other in one stream of chunks (9-byte keys after every number),
        // each whole but the last.
        let chunks: [Int] = try await store.read { txn in
            var out: [Int] = []
            let c = try txn.cursor(tables["history-packed"])
            var e = try c.seek(atLeast: [KeyedDocumentProjection.HistoryRow.streamMark])
            while let entry = e {
                #expect(entry.key.count == 9 && UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[1...])) == UInt64(out.count))
                out.append(entry.value.count)
                e = try c.next()
            }
            return out
        }
        #expect(chunks.count > blocks && chunks.dropLast().allSatisfy { $0 == KeyedDocumentProjection.HistoryRow.chunkSize }, "\(chunks)")

        // Every key as of every seq (each snapshot is one seq), its history and its change kinds.
        for (k, key) in keys.enumerated() {
            var expectedHistory: [(seq: UInt64, document: String?)] = []
            for v in 0..<150 {
                let doc = document(k, v)
                if expectedHistory.last.map({ $0.document != doc }) ?? (doc != nil) { expectedHistory.append((UInt64(v + 1), doc)) }
            }
            let history = try await store.documents { try $0.history(collection: "c", key: key) }
            #expect(history.map(\.seq) == expectedHistory.map(\.seq), "\(key)")
            for (version, expected) in zip(history, expectedHistory) {
                if let doc = expected.document {
                    let parsed = try JSONValue(parsing: bytes(doc))
                    #expect(!version.isRemoved && version.document == parsed, "\(key) at \(version.seq)")
                } else {
                    #expect(version.isRemoved, "\(key) at \(version.seq)")
                }
                let at = events[Int(version.seq) - 1].recordedAt!
                #expect(version.recordedAt == at, "\(key) at \(version.seq): \(version.recordedAt) for \(at)")
            }
            #expect(history.map(\.version) == Array(1...history.count))
            for v in stride(from: 0, to: 150, by: 7) {
                let state = try await store.documents { try $0.state(collection: "c", key: key, asOf: UInt64(v + 1)) }
                if let doc = document(k, v) {
                    let parsed = try JSONValue(parsing: bytes(doc))
                    #expect(state?.document == parsed, "\(key) as of \(v + 1)")
                } else {
                    #expect(state == nil || state!.removed, "\(key) as of \(v + 1)")
                }
            }
            let seqs = expectedHistory.map(\.seq)
            let kinds = try await store.documents { reader in try seqs.map { try reader.changeKind(collection: "c", key: key, at: $0) } }
            #expect(kinds.allSatisfy { $0 != nil })
        }
        // A rebuild on a scratch store writes the same bytes.
        #expect(try await store.verify().ok)
    }

    /// Which rows a block holds follows from the rows alone: the same snapshots appended one at a
    /// time, in batches of 7 and all at once leave the same `history-packed` and `history`, byte
    /// for byte, and blocks of more than one row.
    @Test func blocksDoNotDependOnBatches() async throws {
        let (events, _, _) = Self.snapshots()
        var tablesBytes: [[[UInt8]]] = []
        for batch in [1, 7, events.count] {
            let store = try await openStore()
            for start in stride(from: 0, to: events.count, by: batch) {
                _ = try await store.append(Array(events[start..<min(start + batch, events.count)]))
            }
            let tables = try store.tables(of: "documents")
            let rows = try await Self.packedRows(store, tables)
            #expect(Set(rows.filter { $0.mark == KeyedDocumentProjection.HistoryRow.blockMark }.map(\.entry)).count > 1)
            let bytes: [[UInt8]] = try await store.read { txn in
                var out: [[UInt8]] = []
                for name in ["history-packed", "history"] {
                    let c = try txn.cursor(tables[name])
                    var e = try c.first()
                    while let entry = e { out.append([UInt8](entry.key) + [UInt8](entry.value)); e = try c.next() }
                }
                return out
            }
            tablesBytes.append(bytes)
        }
        #expect(tablesBytes[0] == tablesBytes[1] && tablesBytes[1] == tablesBytes[2])
    }

    /// In an encrypted store every chunk of the stream is sealed (and still fits its page): the
    /// blocks read back as the plain store's do, `verify` finds them as a rebuild writes them,
    /// and the file holds none of the documents' text.
    @Test func blocksOfAnEncryptedStoreReadBackAndHoldNoPlaintext() async throws {
        let (events, keys, _) = Self.snapshots()
        let dir = makeTempDir("sealed")
        let sealed = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: EncryptionTests.options(StoreKey.generate()))
        let plain = try await openStore()
        for start in stride(from: 0, to: events.count, by: 10) {
            _ = try await sealed.append(Array(events[start..<(start + 10)]))
            _ = try await plain.append(Array(events[start..<(start + 10)]))
        }
        let rows = try await Self.packedRows(sealed, try sealed.tables(of: "documents"))
        #expect(rows.filter { $0.mark == KeyedDocumentProjection.HistoryRow.blockMark }.count > 65)
        for key in keys {
            let a = try await sealed.documents { try $0.history(collection: "c", key: key) }
            let b = try await plain.documents { try $0.history(collection: "c", key: key) }
            #expect(a == b && !a.isEmpty, "\(key)")
        }
        let report = try await sealed.verify()
        #expect(report.ok, "\(report.problems) \(report.projections.flatMap(\.differences))")
        try sealed.environment.sync()
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb")))
        let needles = ["\"name\":\"item 17\",\"price\"", "\"updated_at\":\"2026-11-26T"]
        #expect(EncryptionTests.leaks(in: file, of: needles).isEmpty)
    }

    /// A row that stays plain (here a row of one document larger than a block holds,
    /// ``KeyedDocumentProjection/HistoryRow/solidTextLimit``) closes the waiting rows' block, so a
    /// block holds consecutive numbers; the rows on both sides of it read back.
    @Test func aPlainRowClosesTheWaitingBlock() async throws {
        let store = try await openStore()
        var rng = SplitMix64(seed: 3)
        func noise(_ n: Int) -> String { String((0..<n).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        func snapshot(_ members: [String]) -> NewEvent {
            NewEvent(
                type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")], payload: bytes("{" + members.joined(separator: ",") + "}"))
        }
        var expected: [String: [String]] = [:]
        // Versions that share their text: the second is a delta, so the two make one row.
        func small(_ key: String) async throws {
            let name = noise(300)
            for v in 0..<2 {
                let doc = "{\"name\":\"\(key) \(name)\",\"v\":\(v)}"
                expected[key, default: []].append(doc)
                _ = try await store.append(snapshot(["\"\(key)\":" + doc]))
            }
        }
        // Rows 1–4: two versions each, closed by the next key's snapshot: they wait.
        for k in 0..<4 { try await small("a\(k)") }
        // Row 5: one version of 300 KB, closed by its second (row 6 waits after it).
        let large = ["{\"text\":\"\(noise(300_000))\"}", "{\"text\":\"\(noise(40))\"}"]
        for doc in large {
            expected["big", default: []].append(doc)
            _ = try await store.append(snapshot(["\"big\":" + doc]))
        }
        for k in 0..<3 { try await small("b\(k)") }
        _ = try await store.append(snapshot([]))
        let tables = try store.tables(of: "documents")
        let rows = try await Self.packedRows(store, tables)
        let block = KeyedDocumentProjection.HistoryRow.blockMark, solid = KeyedDocumentProjection.HistoryRow.solidMark
        try #require(rows.count > 5, "\(rows.map(\.mark))")
        #expect(rows.map(\.mark) == [block, block, block, block, 0] + Array(repeating: solid, count: rows.count - 5), "\(rows.map(\.mark))")
        #expect(Set(rows.prefix(4).map(\.entry)) == [1])
        #expect(try await Self.pending(store, tables).count == rows.count - 5)
        for (key, docs) in expected {
            let history = try await store.documents { try $0.history(collection: "c", key: key) }
            let present = history.filter { !$0.isRemoved }.map(\.document)
            #expect(present == (try docs.map { try JSONValue(parsing: bytes($0)) }), "\(key)")
        }
        #expect(try await store.verify().ok)
    }

    /// Rows written before blocks, anchored against an anchor row's first
    /// ``KeyedDocumentProjection/HistoryRow/anchorPrefixLimit`` bytes of columns (a custom
    /// projection whose version did not change keeps them), still read back.
    @Test func rowsAnchoredBeforeBlocksReadBack() async throws {
        let store = try await openStore()
        var rng = SplitMix64(seed: 9)
        let words = (0..<400).map { _ in String((0..<(3 + Int(rng.next() % 6))).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        func text(_ n: Int) -> String { (0..<n).map { _ in words[Int(rng.next() % 400)] }.joined(separator: " ") }
        let big = text(5_500)
        func snapshot(_ members: [String]) -> NewEvent {
            NewEvent(
                type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")], payload: bytes("{" + members.joined(separator: ",") + "}"))
        }
        // Row 1, the anchor: two versions of a 36 KB document, closed by its removal.
        var expected: [String: [String]] = [:]
        for v in 0..<2 {
            let doc = "{\"text\":\"\(big)\",\"v\":\(v)}"
            expected["big", default: []].append(doc)
            _ = try await store.append(snapshot(["\"big\":" + doc]))
        }
        // Then small keys, each two versions and a removal: rows 2…11.
        for k in 0..<10 {
            let name = text(40)
            for v in 0..<2 {
                let doc = "{\"name\":\"\(name)\",\"v\":\(v)}"
                expected["k\(k)", default: []].append(doc)
                _ = try await store.append(snapshot(["\"k\(k)\":" + doc]))
            }
        }
        _ = try await store.append(snapshot([]))
        #expect(big.utf8.count > KeyedDocumentProjection.HistoryRow.anchorPrefixLimit)
        // Every row waits, solid alone. Rows 2… become anchored rows, as the layout before blocks
        // wrote them, and none waits any more.
        let tables = try store.tables(of: "documents")
        let db = tables["history-packed"]
        let before = try await Self.packedMarks(store, tables)
        #expect(before == Array(repeating: KeyedDocumentProjection.HistoryRow.solidMark, count: 11), "\(before)")
        try store.environment.write { txn in
            let anchor = try #require(try txn.get(db, key: UInt64(1).bigEndianBytes))
            let prefix = Array(
                try anchor.withUnsafeBytes { try KeyedDocumentProjection.HistoryRow.columns(ofSolid: $0) }.prefix(
                    KeyedDocumentProjection.HistoryRow.anchorPrefixLimit))
            for number in UInt64(2)...11 {
                let row = try #require(try txn.get(db, key: number.bigEndianBytes))
                let columns = try row.withUnsafeBytes { try KeyedDocumentProjection.HistoryRow.columns(ofSolid: $0) }
                let frame = try #require(ZstdContext.pooled { $0.compress(columns, prefix: prefix, level: 9) })
                var w = ByteWriter()
                w.u8(KeyedDocumentProjection.HistoryRow.anchoredMark)
                w.varint(columns.count)
                w.raw(frame)
                _ = try txn.put(db, key: number.bigEndianBytes, value: w.bytes)
            }
            try KeyedDocumentProjection.HistoryRow.Pending().write(txn, db)
        }
        #expect(try await Self.packedMarks(store, tables).dropFirst().allSatisfy { $0 == KeyedDocumentProjection.HistoryRow.anchoredMark })
        for (key, docs) in expected {
            let history = try await store.documents { try $0.history(collection: "c", key: key) }
            let present = history.filter { !$0.isRemoved }.map(\.document)
            #expect(present == (try docs.map { try JSONValue(parsing: bytes($0)) }), "\(key)")
        }
    }

    @Test func aDamagedBlockIsReported() async throws {
        let store = try await openStore()
        let (events, _, _) = Self.snapshots()
        _ = try await store.append(Array(events[0..<70]))
        let tables = try store.tables(of: "documents")
        let db = tables["history-packed"]
        let (key, original): ([UInt8], [UInt8]) = try await store.read { txn in
            // The first block (number 0 holds the waiting rows' count).
            let c = try txn.cursor(db, raw: true)
            _ = try c.first()
            let e = try #require(try c.next())
            return ([UInt8](e.key), [UInt8](e.value))
        }
        #expect(original.first == KeyedDocumentProjection.HistoryRow.blockMark)
        var damaged = original
        damaged[damaged.count / 2] ^= 0x10
        try store.environment.write { txn in
            _ = try key.withUnsafeBytes { k in try damaged.withUnsafeBytes { try txn.putRaw(db, key: k, value: $0) } }
        }
        let report = try await store.verify()
        #expect(report.ok == false)
    }

    @Test func timesRoundTrip() {
        for t: Int64 in [
            0, 1, -1, 999_999, 1_000_000, -3_000_000, 3_600_000_000, 1_764_000_000_123_457, -1_764_000_000_000_000,
            Int64.max / 2, Int64.min / 2
        ] {
            #expect(KeyedDocumentProjection.HistoryRow.decodeTime(KeyedDocumentProjection.HistoryRow.encodeTime(t)) == t, "\(t)")
        }
        // Whole seconds take the short form: an hour is 3 bytes, not 5.
        var n = 0
        ByteWriter.varint(KeyedDocumentProjection.HistoryRow.encodeTime(3_600_000_000)) { _ in n += 1 }
        #expect(n == 2)
    }

    /// A row holds no more document text than a read should decompress
    /// (``KeyedDocumentProjection/HistoryRow/solidTextLimit``): versions of 40 KB documents
    /// start a new row every 13 versions, a block of its own; a document larger than half of
    /// that is a row of its own, which stays plain.
    @Test func rowsOfLargeDocumentsAreCutToWhatAReadDecompresses() async throws {
        let store = try await openStore()
        var rng = SplitMix64(seed: 5)
        func text(_ n: Int) -> String { String((0..<n).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        func append(_ text: String, _ v: Int) async throws {
            _ = try await store.append(
                NewEvent(
                    type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")],
                    payload: bytes("{\"k\":{\"text\":\"\(text)\",\"v\":\(v)}}")))
        }
        let medium = text(40_000)
        for v in 0..<20 { try await append(medium, v) }
        let tables = try store.tables(of: "documents")
        // 40 KB a version (and a few bytes): rows of as many as the limit holds (13 of 512 KiB),
        // so 20 versions close 19 / 13 = 1 row, larger than a block of several rows holds: a
        // block of its own.
        let perRow = KeyedDocumentProjection.HistoryRow.solidTextLimit / 40_100
        let cut = try await Self.packedMarks(store, tables)
        #expect(perRow < KeyedDocumentProjection.keyframeInterval && cut.count == 19 / perRow, "\(cut)")
        #expect(perRow * 40_000 > KeyedDocumentProjection.HistoryRow.blockLimit && cut.allSatisfy { $0 == KeyedDocumentProjection.HistoryRow.blockMark })
        let large = text(300_000)
        for v in 0..<3 { try await append(large, v) }
        // The open row of 7 medium versions closes (a block of its own too), then two 300 KB
        // versions: a row each, plain.
        let all = try await Self.packedRows(store, tables)
        #expect(all.map(\.mark) == Array(cut) + [KeyedDocumentProjection.HistoryRow.blockMark, 0, 0], "\(all.map(\.mark))")
        #expect(Set(all.map(\.entry)).count == all.count)
        #expect(try await Self.pending(store, tables) == .init())
        let history = try await store.documents { try $0.history(collection: "c", key: "k") }
        #expect(history.count == 23 && history.last?.document.value(atPath: "v") == .number("2"))
        #expect(history[19].document.value(atPath: "text") == .string(medium))
        #expect(history[20].document.value(atPath: "text") == .string(large))
    }

    /// A removal closes its row: the key's row is packed at once, and when it is the key's only
    /// row its number goes in the key's `current` record instead of a pointer in `history`. A
    /// document that comes back gets that pointer back in `history` and starts a row of its own,
    /// as a keyframe; removed again, its rows stay pointers there.
    @Test func aRemovalClosesItsRowAndAReturnStartsANewOne() async throws {
        let store = try await openStore()
        func snapshot(_ members: String) -> NewEvent {
            NewEvent(type: DocumentEvents.snapshotRecorded, stream: "s", metadata: [("collection", "c")], payload: bytes("{" + members + "}"))
        }
        let item = { (v: Int) in "\"gone\":{\"name\":\"a long enough name to compress\",\"v\":\(v)}" }
        let stays = "\"stays\":{\"v\":1}"
        for event in [snapshot(item(1) + "," + stays), snapshot(item(2) + "," + stays), snapshot(stays)] { _ = try await store.append(event) }
        let tables = try store.tables(of: "documents")
        // The rows of key `gone` in `history`: their first bytes (0xFE: a pointer).
        func rows() async throws -> [UInt8] {
            try await store.read { txn in
                let prefix = Array("c".utf8) + [0] + Array("gone".utf8) + [0]
                let c = try txn.cursor(tables["history"])
                var out: [UInt8] = []
                var e = try c.seek(atLeast: prefix)
                while let entry = e, entry.key.count == prefix.count + 8, entry.key.starts(with: prefix) {
                    out.append(entry.value.first!)
                    e = try c.next()
                }
                return out
            }
        }
        #expect(try await rows() == [])
        // The gone key's record keeps no digest but its row's number (flag 2, then a varint);
        // the present one's keeps its digest (16 bytes after the four varints and the flag).
        func record(_ key: String) async throws -> [UInt8] {
            try await store.read { txn in
                [UInt8](try txn.get(tables["current"], key: Array("c".utf8) + [0, 1] + Array(key.utf8))!)
            }
        }
        let gone = try await record("gone")
        #expect(gone.count == 6 && gone[4] == KeyedDocumentProjection.CurrentRecord.removedKeepingRow)
        #expect(try await record("stays").count == 5 + 16)
        // Every read of the gone key's history finds the row its record keeps.
        let kept = try await store.documents { reader in
            (
                try reader.history(collection: "c", key: "gone"), try reader.version(collection: "c", key: "gone", asOf: 2),
                try reader.changeKinds(collection: "c", key: "gone", since: 0), try reader.version(collection: "c", key: "gone", asOf: 0),
                try reader.states(collection: "c", asOf: 2).map(\.key)
            )
        }
        #expect(kept.0.map(\.kind) == [.added, .changed, .removed] && kept.1?.document.value(atPath: "v") == .number("2"))
        #expect(kept.2 == [.added, .changed, .removed] && kept.3 == nil && kept.4 == ["gone", "stays"])
        _ = try await store.append(snapshot(item(3) + "," + stays))
        #expect(try await record("gone").count == 5 + 16)
        #expect(try await rows() == [KeyedDocumentProjection.HistoryRow.pointerMark, 0])
        let history = try await store.documents { try $0.history(collection: "c", key: "gone") }
        #expect(history.map(\.kind) == [.added, .changed, .removed, .reappeared])
        #expect(history.map { $0.document.value(atPath: "v") } == [.number("1"), .number("2"), .number("2"), .number("3")])
        // Removed again: two rows, so both stay pointers in `history` and the record keeps none.
        _ = try await store.append(snapshot(stays))
        #expect(try await rows() == [KeyedDocumentProjection.HistoryRow.pointerMark, KeyedDocumentProjection.HistoryRow.pointerMark])
        #expect(try await record("gone") == Array(try await record("gone").prefix(4)) + [1])
        let again = try await store.documents { try $0.history(collection: "c", key: "gone") }
        #expect(again.map(\.kind) == [.added, .changed, .removed, .reappeared, .removed])
        let report = try await store.verify()
        #expect(report.problems.isEmpty && report.projections.allSatisfy(\.matchesRebuild), "\(report.problems) \(report.projections.flatMap(\.differences))")
    }
}
