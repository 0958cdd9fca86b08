@testable import EventStore
import Foundation
import Testing

/// Envelopes by column (``EnvelopeColumns``, format 11): every kind of envelope comes back byte
/// for byte, one that would not is refused (the block is then written row-wise), and damaged
/// columns are an error, never a trap or a wrong envelope.
@Suite struct EnvelopeColumnsTests {
    /// Whole envelopes of the seqs `first`…, with every shape the codec handles:
    /// UUID ids and others (an upper-case UUID is not compacted), types and streams that repeat
    /// or not, times that go back, metadata that repeats, changes, is empty or names a key twice,
    /// with a payload or without.
    static func envelopes(_ count: Int, first: UInt64, seed: UInt64) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        var at = Int64(1_700_000_000_000_000)
        return (0..<count).map { i in
            let id: String =
                switch rng.next() % 4 {
                case 0: RandomID.uuid()
                case 1: RandomID.uuid().uppercased()
                case 2: "import-\(rng.next() % 1000)"
                default: String(repeating: "é", count: Int(rng.next() % 40) + 1)
                }
            at += Int64(rng.next() % 5_000_000) - 1_000_000
            var metadata: [RecordedEvent.Metadatum] = []
            for k in 0..<Int(rng.next() % 6) {
                let key = ["run", "url", "commit", "status", "", "page"][(k + Int(rng.next() % 2)) % 6]
                let value = rng.next() % 3 == 0 ? "v\(rng.next() % 4)" : (rng.next() % 2 == 0 ? "" : String(rng.next(), radix: 16))
                metadata.append(.init(key: key, value: value))
            }
            let payload =
                rng.next() % 2 == 0
                ? PayloadReference(hash: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, size: Int(rng.next() % 1_000_000)) : nil
            var event = RecordedEvent(
                seq: first + UInt64(i), id: id, type: ["PageFetched", "FetchCompleted", "Ω"][Int(rng.next() % 3)],
                schemaVersion: Int(rng.next() % 3) + 1, recordedAt: Timestamp(microseconds: at),
                stream: rng.next() % 4 == 0 ? "other" : "scraped", metadata: metadata, payload: payload,
                previousHash: Envelope.zeroHash, hash: [])
            return Envelope.encode(&event)
        }
    }

    @Test(arguments: [1, 2, 40, 300])
    func everyEnvelopeComesBackByteForByte(count: Int) throws {
        for seed in 0..<UInt64(20) {
            let first = 1 + seed * 1_000_003
            let envelopes = Self.envelopes(count, first: first, seed: seed)
            let columns = try #require(EnvelopeColumns.encode(envelopes, first: first))
            let back = try columns.withUnsafeBytes { try EnvelopeColumns.decode($0, count: count, first: first) }
            #expect(back.ranges.map { [UInt8](back.bytes[$0]) } == envelopes.map { [UInt8]($0.dropLast(64)) })
            // The same envelopes give the same columns: what is stored follows from the log alone.
            #expect(EnvelopeColumns.encode(envelopes, first: first) == columns)
        }
    }

    /// Columns are smaller than the rows they hold before compression too: UUIDs as 16 bytes, a
    /// repeated value as one.
    @Test func repeatedFieldsCostAByte() throws {
        let envelopes = (0..<50).map { i -> [UInt8] in
            var event = RecordedEvent(
                seq: UInt64(i + 1), id: RandomID.uuid(), type: "CollectionPageFetched", schemaVersion: 1,
                recordedAt: Timestamp(microseconds: 1_700_000_000_000_000 + Int64(i) * 1_000), stream: "scraped",
                metadata: [.init(key: "run", value: "c8903dfb-b83e-4be0-b279-7ff1ef91b835"), .init(key: "url", value: "git:/tmp/repo:x.json")],
                payload: nil, previousHash: Envelope.zeroHash, hash: [])
            return Envelope.encode(&event)
        }
        let columns = try #require(EnvelopeColumns.encode(envelopes, first: 1))
        let perEnvelope = (columns.count - (envelopes[0].count - 64)) / 49
        #expect(perEnvelope <= 17 + 1 + 1 + 2 + 1 + 12 + 2 + 1, "\(perEnvelope) bytes an envelope after the first")
    }

    /// What would not come back exactly is refused, and the block is then written row-wise: an
    /// envelope of another format, a varint longer than it needs, bytes after its end, a number
    /// past Int's range, or seqs that do not count up from `first`.
    @Test func whatWouldNotComeBackIsRefused() {
        let envelopes = Self.envelopes(10, first: 5, seed: 7)
        #expect(EnvelopeColumns.encode(envelopes, first: 5) != nil)
        #expect(EnvelopeColumns.encode(envelopes, first: 6) == nil)
        var other = envelopes
        other[3][0] = 2
        #expect(EnvelopeColumns.encode(other, first: 5) == nil)
        var long = envelopes
        // The id's length, one byte, written in two: the same number, other bytes.
        let n = long[4][9]
        long[4].replaceSubrange(9...9, with: [n | 0x80, 0])
        #expect(EnvelopeColumns.encode(long, first: 5) == nil)
        var trailing = envelopes
        trailing[9].append(0)
        #expect(EnvelopeColumns.encode(trailing, first: 5) == nil)
        // A schema version past Int's range (a damaged envelope a compaction samples): refused,
        // not a trap.
        var huge = envelopes
        let idLength = Int(huge[2][9])
        let version = 9 + 1 + idLength + 1 + Int(huge[2][9 + 1 + idLength])
        huge[2].replaceSubrange(version...version, with: [UInt8](repeating: 0xFF, count: 9) + [0x01])
        #expect(EnvelopeColumns.encode(huge, first: 5) == nil)
        #expect(EnvelopeColumns.encode([[UInt8]](), first: 1)?.isEmpty == true)
    }

    /// Damaged columns (a flipped bit, a cut, bytes added) fail to decode or decode to other
    /// envelopes, whose hashes the block's seal and the chain then catch: never a trap. A few
    /// decode to the same envelopes, harmlessly: a "same value as before" written out as that
    /// value (an empty one, 0x00 flipped to 0x01).
    @Test func damagedColumnsFailOrDiffer() throws {
        let rows = Self.envelopes(40, first: 1, seed: 3).map { [UInt8]($0.dropLast(64)) }
        let columns = try #require(EnvelopeColumns.encode(Self.envelopes(40, first: 1, seed: 3), first: 1))
        var rng = SplitMix64(seed: 99)
        var (failed, same) = (0, 0)
        let trials = 2_000
        for trial in 0..<trials {
            var damaged = columns
            switch trial % 3 {
            case 0: damaged[Int(rng.next() % UInt64(damaged.count))] ^= UInt8(1 << (rng.next() % 8))
            case 1: damaged.removeLast(Int(rng.next() % UInt64(damaged.count)) + 1)
            default: damaged.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(damaged.count)))
            }
            if let back = try? damaged.withUnsafeBytes({ try EnvelopeColumns.decode($0, count: 40, first: 1) }) {
                if back.ranges.map({ [UInt8](back.bytes[$0]) }) == rows { same += 1 }
            } else {
                failed += 1
            }
        }
        #expect(failed > trials / 3, "\(failed) of \(trials) damaged columns failed to decode")
        #expect(same * 100 < trials, "\(same) of \(trials) damaged columns decoded to the same envelopes")
        // A count the columns do not hold.
        #expect(throws: (any Error).self) { try columns.withUnsafeBytes { try EnvelopeColumns.decode($0, count: 41, first: 1) } }
        #expect(throws: (any Error).self) { try columns.withUnsafeBytes { try EnvelopeColumns.decode($0, count: 39, first: 1) } }
    }

    /// A store compacted before format 11 (row-wise blocks) reads the same, verifies, and its
    /// next compaction lays the envelopes out by column, in fewer bytes.
    @Test func rowWiseBlocksStillReadAndCompactByColumn() async throws {
        let store = try await openStore()
        try await appendInBatches(PackedEnvelopeTests.events(600, seed: 41), to: store, seed: 41)
        let before = try await store.events(EventQuery())
        let rowWise = try await store.compactedCopy(into: makeTempDir("row-wise"), envelopesByColumn: false)
        let marks = try await PackedEnvelopeTests.marks(rowWise)
        #expect(marks.contains(EnvelopeBlock.mark) && !marks.contains(EnvelopeBlock.columnsMark))
        #expect(try await rowWise.events(EventQuery()) == before)
        #expect(try await rowWise.verify().ok)

        let byColumn = try await rowWise.compactedCopy(into: makeTempDir("by-column"))
        let again = try await PackedEnvelopeTests.marks(byColumn)
        #expect(again.contains(EnvelopeBlock.columnsMark) && !again.contains(EnvelopeBlock.mark))
        #expect(try await byColumn.events(EventQuery()) == before)
        for seq in stride(from: 1, through: 600, by: 13) { #expect(try await byColumn.event(seq: UInt64(seq)) == before[seq - 1]) }
        #expect(try await byColumn.verify().ok)
        let (rowBytes, columnBytes) = (try await PackedEnvelopeTests.logBytes(rowWise), try await PackedEnvelopeTests.logBytes(byColumn))
        #expect(columnBytes < rowBytes, "\(columnBytes) bytes of envelopes by column, \(rowBytes) row-wise")
    }
}
