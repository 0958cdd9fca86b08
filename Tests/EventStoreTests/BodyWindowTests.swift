@testable import EventStore
import Foundation
import LMDB
import StrataJSON
import Testing

/// Versions of a list stored as skeletons and the objects they bring to their window (codec 6):
/// every version reads back byte for byte, in any order and across writers, and `verify` finds a
/// flipped byte.
@Suite struct BodyWindowTests {
    /// Version `v` of a page: 120 items (a few change each version), a side list, a count.
    static func page(_ v: Int, pretty: Bool = false) -> [UInt8] {
        var items: [String] = []
        for i in 0..<120 {
            let changes = (0...v).filter { ($0 * 7 + 3) % 120 == i || ($0 * 13) % 120 == i }.count
            items.append(
                "{\"id\":\(i),\"name\":\"item \(i)\",\"price\":\(100 + i * 3 + changes),\"status\":\"\(changes % 2 == 0 ? "open" : "closed")\",\"tags\":[{\"k\":\"a\",\"v\":\"\(changes)\"}]}"
            )
        }
        // Every tenth version drops an item and repeats one (a duplicate in the same version).
        if v % 10 == 9 {
            items.removeLast()
            items.append(items[3])
        }
        let regions = (0..<4).map { "{\"region\":\"r\($0)\",\"open\":\(($0 + v / 5) % 3),\"note\":\"regional summary\"}" }
        let text = "{\"count\":\(items.count),\"items\":[\(items.joined(separator: ","))],\"regions\":[\(regions.joined(separator: ","))],\"v\":\(v)}"
        guard pretty else { return Array(text.utf8) }
        let value = try! JSONSerialization.jsonObject(with: Data(text.utf8))
        return [UInt8](try! JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted]))
    }

    static func event(_ v: Int, url: String = "http://api.test/items", body: [UInt8]? = nil, windowed: Bool = true) -> NewEvent {
        var e = NewEvent(id: "\(url)#\(v)", type: "CollectionPageFetched", stream: "src", metadata: [("url", url)], payload: body ?? page(v))
        e.windowed = windowed
        return e
    }

    static func codecs(_ store: EventStore) -> [UInt64: UInt8] {
        ((try? DeltaChainTests.bodyRows(store)) ?? [:]).mapValues { row in row.withUnsafeBytes { (try? BlobCodec.inner($0).first) ?? 0 } }
    }

    static func readAll(_ store: EventStore, expecting bodies: [[UInt8]]) async throws {
        for (v, body) in bodies.enumerated().shuffled() {
            let read = try await store.body(sha256: Hashing.sha256(body).hex)
            #expect(read == body, "version \(v) reads back")
        }
    }

    @Test(arguments: [false, true])
    func everyVersionReadsBackInAnyOrder(pretty: Bool) async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 16))
        let bodies = (0..<40).map { Self.page($0, pretty: pretty) }
        // In batches of five, as an import appends them.
        for start in stride(from: 0, to: 40, by: 5) {
            _ = try await store.append((start..<(start + 5)).map { Self.event($0, body: bodies[$0]) })
        }
        let codecs = Self.codecs(store)
        #expect(codecs.values.filter { $0 == BlobCodec.window }.count >= 30, "\(codecs.values.sorted())")
        try await Self.readAll(store, expecting: bodies)
        #expect(try await store.verify().ok)
    }

    /// A second writer (a reopened store) goes on with the window it finds in the log, its
    /// objects stream started again; every version reads back.
    @Test func aReopenedStoreGoesOnWithTheWindow() async throws {
        let dir = makeTempDir()
        let bodies = (0..<12).map { Self.page($0) }
        do {
            let store = try await EventStore.open(at: dir, projections: [], options: DeltaChainTests.options(keyframeInterval: 64))
            for v in 0..<6 { _ = try await store.append([Self.event(v, body: bodies[v])]) }
        }
        let store = try await EventStore.open(at: dir, projections: [], options: DeltaChainTests.options(keyframeInterval: 64))
        for v in 6..<12 { _ = try await store.append([Self.event(v, body: bodies[v])]) }
        let flags = try DeltaChainTests.bodyRows(store).values.compactMap { row in
            try row.withUnsafeBytes { r in try BlobCodec.isDelta(r) ? DeltaHeader(r, checkSeal: true).window.map { ($0.starts, $0.restarts) } : nil }
        }
        #expect(flags.count == 11)
        #expect(flags.filter(\.0).count == 1, "one window")
        #expect(flags.filter(\.1).count == 1, "its stream started again once, by the second writer")
        try await Self.readAll(store, expecting: bodies)
        #expect(try await store.verify().ok)
    }

    /// A body that is not JSON, or holds a control byte the skeleton uses, is stored as a delta;
    /// the next version starts a window on it.
    @Test func bodiesAWindowCannotHoldAreDeltas() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 64))
        var bodies = (0..<8).map { Self.page($0) }
        bodies[3] = Array(bodies[3].dropLast(7))
        bodies[5] = Array(String(decoding: bodies[5], as: UTF8.self).replacingOccurrences(of: "item 7\"", with: "item 7\u{02}\"").utf8)
        for v in bodies.indices { _ = try await store.append([Self.event(v, body: bodies[v])]) }
        let codecs = Self.codecs(store)
        #expect(codecs[4] == BlobCodec.delta && codecs[6] == BlobCodec.delta, "\(codecs.sorted { $0.key < $1.key })")
        #expect(codecs[5] == BlobCodec.window && codecs[7] == BlobCodec.window)
        try await Self.readAll(store, expecting: bodies)
        #expect(try await store.verify().ok)
    }

    /// A flipped byte anywhere in a window row is found by `verify`, and reads fail cleanly.
    @Test func everyFlippedByteOfAWindowRowIsReported() async throws {
        let dir = makeTempDir()
        let store = try await EventStore.open(at: dir, projections: [], options: DeltaChainTests.options(keyframeInterval: 64))
        _ = try await store.append((0..<4).map { Self.event($0) })
        let rows = try DeltaChainTests.bodyRows(store)
        let (seq, row) = try #require(rows.filter { $0.value.first == BlobCodec.window }.max { $0.key < $1.key })
        for offset in stride(from: 1, to: row.count, by: max(1, row.count / 40)) {
            var damaged = row
            damaged[offset] ^= 0x10
            try store.environment.write { txn in _ = try txn.put(store.schema.bodies, key: seq.bigEndianBytes, value: damaged) }
            #expect(try await store.verify().ok == false, "byte \(offset) of \(row.count)")
        }
        try store.environment.write { txn in _ = try txn.put(store.schema.bodies, key: seq.bigEndianBytes, value: row) }
        #expect(try await store.verify().ok)
    }

    /// An erasure of a version in the middle of a window stores it and every row above it whole
    /// (their base changed); the versions below read as they were, and the next version starts a
    /// window again.
    @Test func anErasureInAWindowRewritesTheRowsAboveIt() async throws {
        let store = try await EventStore.open(at: makeTempDir(), projections: [], options: DeltaChainTests.options(keyframeInterval: 64))
        var bodies = (0..<10).map { Self.page($0) }
        _ = try await store.append((0..<10).map { Self.event($0, body: bodies[$0]) })
        let erased = Array(String(decoding: bodies[4], as: UTF8.self).replacingOccurrences(of: "\"item 7\"", with: "\"[erased]\"").utf8)
        #expect(erased != bodies[4])
        let rewrite = BodyRewrite(original: Hashing.sha256(bodies[4]), content: erased)
        // The erasure names what it rewrites, as `verify` asks.
        let record = JSONValue.object(["rewrites": EventStore.rewriteRecord([rewrite])])
        let by = try await store.append(NewEvent(type: "Erased", stream: "src", payload: Array(record.canonicalBytes))).seq
        #expect(try await store.rewriteBodies([rewrite], by: by) == 1)
        let codecs = Self.codecs(store)
        #expect((5...10).allSatisfy { codecs[UInt64($0)] != BlobCodec.window }, "rows above the erased one stored whole")
        #expect((2...4).allSatisfy { codecs[UInt64($0)] == BlobCodec.window }, "rows below as they were")
        for v in 10..<14 {
            bodies.append(Self.page(v))
            _ = try await store.append([Self.event(v, body: bodies[v])])
        }
        #expect(Self.codecs(store)[13] == BlobCodec.window)
        for e in try await store.events(EventQuery()) where e.type == "CollectionPageFetched" {
            let v = Int(e.id.split(separator: "#").last!)!
            let same = try await store.payload(of: e) == (v == 4 ? erased : bodies[v])
            #expect(same, "version \(v)")
        }
        #expect(try await store.verify().ok)
    }

    /// An encrypted store seals window rows like any row: every version reads back, `verify`
    /// passes, and no object's text is in the file.
    @Test func aSealedStoreKeepsItsWindowsSealed() async throws {
        let dir = makeTempDir()
        var options = DeltaChainTests.options(keyframeInterval: 64)
        options.key = StoreKey.generate()
        let store = try await EventStore.open(at: dir, projections: [], options: options)
        let bodies = (0..<12).map { Self.page($0) }
        for start in stride(from: 0, to: 12, by: 4) { _ = try await store.append((start..<(start + 4)).map { Self.event($0, body: bodies[$0]) }) }
        try await Self.readAll(store, expecting: bodies)
        #expect(try await store.verify().ok)
        let file = try Data(contentsOf: URL(fileURLWithPath: dir).appendingPathComponent("data.mdb"))
        #expect(file.range(of: Data("regional summary".utf8)) == nil)
        #expect(file.range(of: Data("\"status\":\"closed\"".utf8)) == nil)
    }

    /// A token's values never hold the bytes a token starts with, and read back.
    @Test func digitsAvoidTheTokenBytesAndReadBack() throws {
        for value in [0, 1, 2, 3, 125, 126, 127, 15_875, 15_876, 2_000_000, 1 << 30] {
            var bytes: [UInt8] = []
            BodyWindow.digits(value) { bytes.append($0) }
            #expect(bytes.allSatisfy { $0 >= 0x04 }, "\(value): \(bytes)")
            let read = bytes.withUnsafeBytes { b in
                var at = 0
                return (BodyWindow.digits(b, &at), at)
            }
            #expect(read.0 == value && read.1 == bytes.count)
            // Cut short, or with a token byte inside: nil, never a wrong value.
            let cut = Array(bytes.dropLast())
            #expect(
                cut.withUnsafeBytes { b in
                    var at = 0
                    return BodyWindow.digits(b, &at)
                } == nil)
        }
    }

    /// Seeded random histories of lists: items that change, come, go, repeat and reorder, side
    /// lists regenerated, a version now and then that is not JSON or holds a control byte,
    /// appended in batches by writers that stop and start. Every version reads back byte for
    /// byte, from a fresh reader and in seq order, and `verify` passes.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomHistoriesReadBack(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        func word() -> String { String((0..<(2 + Int(rng.next() % 9))).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) }) }
        var items: [(id: Int, text: String)] = (0..<40).map { ($0, word() + " " + word()) }
        var nextID = 40
        var bodies: [[UInt8]] = []
        for v in 0..<60 {
            for _ in 0..<Int(rng.next() % 6) {
                switch rng.next() % 6 {
                case 0: items.append((nextID, word())); nextID += 1
                case 1 where !items.isEmpty: items.remove(at: Int(rng.next() % UInt64(items.count)))
                case 2 where items.count > 1: items.swapAt(0, Int(rng.next() % UInt64(items.count)))
                default:
                    if !items.isEmpty { items[Int(rng.next() % UInt64(items.count))].text = word() + " " + word() }
                }
            }
            var listed = items.map { "{\"id\":\($0.id),\"text\":\"\($0.text)\",\"nested\":[{\"k\":\"\($0.id % 3)\"}]}" }
            if v % 7 == 3, let first = listed.first { listed.append(first) }
            let side = (0..<3).map { "{\"side\":\($0),\"round\":\(v / 10),\"label\":\"a side entry\"}" }
            var body = Array("{\"v\":\(v),\"items\":[\(listed.joined(separator: ","))],\"side\":[\(side.joined(separator: ","))]}".utf8)
            switch rng.next() % 25 {
            case 0: body = Array(body.prefix(body.count / 2))
            case 1: body = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "a side", with: "a\u{03}side").utf8)
            default: break
            }
            bodies.append(body)
        }
        let dir = makeTempDir()
        var v = 0
        while v < bodies.count {
            // A writer for a few batches, then another (a restart).
            let store = try await EventStore.open(at: dir, projections: [], options: DeltaChainTests.options(keyframeInterval: 24))
            for _ in 0..<(1 + Int(rng.next() % 3)) where v < bodies.count {
                let n = min(bodies.count - v, 1 + Int(rng.next() % 5))
                _ = try await store.append((v..<(v + n)).map { Self.event($0, body: bodies[$0]) })
                v += n
            }
        }
        let store = try await EventStore.open(at: dir, projections: [], options: DeltaChainTests.options(keyframeInterval: 24))
        #expect(Self.codecs(store).values.filter { $0 == BlobCodec.window }.count >= 30)
        try await Self.readAll(store, expecting: bodies)
        for e in try await store.events(EventQuery()) {
            let same = try await store.payload(of: e) == bodies[Int(e.id.split(separator: "#").last!)!]
            #expect(same, "\(e.id) in seq order")
        }
        #expect(try await store.verify().ok)
    }
}
