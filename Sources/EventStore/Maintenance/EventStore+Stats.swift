import Foundation
import LMDB

/// Sizes and counts of a store, from ``EventStore/stats()``.
public struct StoreStats: Sendable, Codable {
    public var path: String
    public var events: Int
    public var headSeq: UInt64
    public var headHash: String
    /// Bytes of the `events` database (envelopes).
    public var logBytes: Int
    /// Bytes of the id, stream, type and time indexes.
    public var indexBytes: Int
    public var blobs: Int
    /// Uncompressed bytes of the distinct bodies.
    public var blobRawBytes: UInt64
    /// Bytes the distinct bodies take stored (after zstd).
    public var blobStoredBytes: UInt64
    /// Bytes of all bodies as referenced by events (before deduplication).
    public var payloadBytes: UInt64
    public var payloadCount: UInt64
    /// payloadBytes / blobRawBytes: how much content addressing saves.
    public var dedupeRatio: Double
    /// blobRawBytes / blobStoredBytes: how much compression saves.
    public var compressionRatio: Double
    public var mapSize: Int
    public var usedBytes: Int
    public var fileBytes: Int
    /// Bytes of the pages in LMDB's free list: reused by later writes, given back to the disk
    /// only by `strata compact`.
    public var freeBytes: Int
    /// Reader slots of dead processes cleared when this process opened the store.
    public var staleReadersCleared: Int
    public var projections: [ProjectionStats]

    public struct ProjectionStats: Sendable, Codable {
        public var name: String
        public var version: Int
        public var storedVersion: Int?
        public var checkpoint: UInt64
        public var lag: UInt64
        public var quarantined: Int
        public var tables: [TableStats]
    }

    public struct TableStats: Sendable, Codable {
        public var name: String
        public var entries: Int
        public var bytes: Int
    }
}

extension EventStore {
    /// Counts and sizes, from one read snapshot.
    public func stats() async throws -> StoreStats {
        let schema = self.schema
        let env = environment
        let projections = self.projections
        let path = self.path
        let quarantined = try await self.quarantined()
        return try await read { txn in
            let head = try LogHead.read(txn, schema)
            let counters = try Counters.read(txn, schema)
            let indexBytes = try [schema.ids, schema.byStream, schema.byType, schema.byTime].reduce(0) { $0 + (try txn.stat($1).bytes) }
            var ps: [StoreStats.ProjectionStats] = []
            for p in projections {
                let cp = try Checkpoint.read(p.name, txn, schema)
                let tables = try schema.projectionTables[p.name]!.databases.sorted { $0.key < $1.key }.map { name, db in
                    let s = try txn.stat(db)
                    return StoreStats.TableStats(name: name, entries: s.entries, bytes: s.bytes)
                }
                ps.append(
                    .init(
                        name: p.name, version: p.version, storedVersion: cp?.version, checkpoint: cp?.seq ?? 0,
                        lag: head.seq - min(head.seq, cp?.seq ?? 0),
                        quarantined: quarantined.filter { $0.projection == p.name }.count, tables: tables))
            }
            var st = stat()
            let fileBytes = stat(path + "/data.mdb", &st) == 0 ? Int(st.st_blocks) * 512 : 0
            return StoreStats(
                path: path, events: Int(head.seq), headSeq: head.seq, headHash: head.hash.hex,
                logBytes: try txn.stat(schema.events).bytes, indexBytes: indexBytes, blobs: try schema.bodyIndex.count(in: txn),
                blobRawBytes: counters.blobRawBytes, blobStoredBytes: counters.blobStoredBytes,
                payloadBytes: counters.payloadBytes, payloadCount: counters.payloadCount,
                dedupeRatio: counters.blobRawBytes == 0 ? 1 : Double(counters.payloadBytes) / Double(counters.blobRawBytes),
                compressionRatio: counters.blobStoredBytes == 0 ? 1 : Double(counters.blobRawBytes) / Double(counters.blobStoredBytes),
                mapSize: env.mapSize, usedBytes: env.usedBytes, fileBytes: fileBytes,
                freeBytes: try txn.freePages() * (try txn.stat(schema.events).pageSize),
                staleReadersCleared: env.staleReadersCleared, projections: ps)
        }
    }
}
