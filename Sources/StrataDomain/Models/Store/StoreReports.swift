/// How far a step over the log has come: a projection catching up or being rebuilt, or a copy.
public struct CatchUpProgress: Sendable, Hashable {
    public var projection: String
    public var applied: UInt64
    public var head: UInt64
    public init(projection: String, applied: UInt64, head: UInt64) { self.projection = projection; self.applied = applied; self.head = head }
}

/// The last event of a log: its seq and hash (hex).
public struct LogHead: Sendable, Hashable {
    public var seq: UInt64
    public var hash: String
    public init(seq: UInt64, hash: String) { self.seq = seq; self.hash = hash }
}

/// What a check of the store found: the hash chain, the bodies and each projection against a
/// rebuild of it.
public struct StoreVerification: Sendable {
    public struct ProjectionCheck: Sendable {
        public var name: String
        public var checkpoint: UInt64
        public var matchesRebuild: Bool
        public var differences: [String]
        /// A digest of the projection's tables, the same on every store with the same log.
        public var digest: String
        public init(name: String, checkpoint: UInt64, matchesRebuild: Bool, differences: [String], digest: String) {
            self.name = name; self.checkpoint = checkpoint; self.matchesRebuild = matchesRebuild; self.differences = differences; self.digest = digest
        }
    }

    public var headSeq: UInt64
    public var eventsChecked: UInt64
    public var bodiesChecked: Int
    /// The first problems found, and how many there were in all.
    public var problems: [String]
    public var problemCount: Int
    public var projections: [ProjectionCheck]
    public var quarantined: [QuarantinedEntry]

    public init(
        headSeq: UInt64, eventsChecked: UInt64, bodiesChecked: Int, problems: [String], problemCount: Int, projections: [ProjectionCheck],
        quarantined: [QuarantinedEntry]
    ) {
        self.headSeq = headSeq; self.eventsChecked = eventsChecked; self.bodiesChecked = bodiesChecked; self.problems = problems
        self.problemCount = problemCount; self.projections = projections; self.quarantined = quarantined
    }

    /// Nothing is wrong with the chain, the bodies or a projection.
    public var ok: Bool { problemCount == 0 && projections.allSatisfy(\.matchesRebuild) }
}

/// An event a projection could not fold, set aside with the reason.
public struct QuarantinedEntry: Sendable, Hashable {
    public var projection: String
    public var seq: UInt64
    public var reason: String
    public init(projection: String, seq: UInt64, reason: String) { self.projection = projection; self.seq = seq; self.reason = reason }
}

/// The store's size and shape: events, bodies and their deduplication, projections, the map.
public struct StoreStatistics: Sendable {
    public struct Projection: Sendable {
        public var name: String
        public var version: Int
        public var checkpoint: UInt64
        public var lag: UInt64
        public var quarantined: Int
        public var tables: [Table]
        public init(name: String, version: Int, checkpoint: UInt64, lag: UInt64, quarantined: Int, tables: [Table]) {
            self.name = name; self.version = version; self.checkpoint = checkpoint; self.lag = lag; self.quarantined = quarantined; self.tables = tables
        }
    }

    public struct Table: Sendable {
        public var name: String
        public var entries: Int
        public var bytes: Int
        public init(name: String, entries: Int, bytes: Int) { self.name = name; self.entries = entries; self.bytes = bytes }
    }

    public var path: String
    public var events: Int
    public var headSeq: UInt64
    public var headHash: String
    public var logBytes: Int
    public var indexBytes: Int
    public var bodies: Int
    public var bodyRawBytes: UInt64
    public var bodyStoredBytes: UInt64
    public var payloadBytes: UInt64
    public var payloadCount: UInt64
    public var dedupeRatio: Double
    public var compressionRatio: Double
    public var mapSize: Int
    public var usedBytes: Int
    public var fileBytes: Int
    public var freeBytes: Int
    public var staleReadersCleared: Int
    public var projections: [Projection]

    public init(
        path: String, events: Int, headSeq: UInt64, headHash: String, logBytes: Int, indexBytes: Int, bodies: Int, bodyRawBytes: UInt64,
        bodyStoredBytes: UInt64, payloadBytes: UInt64, payloadCount: UInt64, dedupeRatio: Double, compressionRatio: Double, mapSize: Int,
        usedBytes: Int, fileBytes: Int, freeBytes: Int, staleReadersCleared: Int, projections: [Projection]
    ) {
        self.path = path; self.events = events; self.headSeq = headSeq; self.headHash = headHash; self.logBytes = logBytes
        self.indexBytes = indexBytes; self.bodies = bodies; self.bodyRawBytes = bodyRawBytes; self.bodyStoredBytes = bodyStoredBytes
        self.payloadBytes = payloadBytes; self.payloadCount = payloadCount; self.dedupeRatio = dedupeRatio; self.compressionRatio = compressionRatio
        self.mapSize = mapSize; self.usedBytes = usedBytes; self.fileBytes = fileBytes; self.freeBytes = freeBytes
        self.staleReadersCleared = staleReadersCleared; self.projections = projections
    }
}

/// An event to append as given (`strata record`): the engine's own vocabulary, for scripts.
public struct NewLogEntry: Sendable {
    /// A deterministic id makes the append idempotent; nil draws a random one.
    public var id: String?
    public var type: String
    public var schemaVersion: Int
    public var recordedAt: LogTime?
    public var stream: String
    public var metadata: [(key: String, value: String)]
    public var payload: [UInt8]?
    public init(
        id: String?, type: String, schemaVersion: Int = 1, recordedAt: LogTime? = nil, stream: String, metadata: [(key: String, value: String)] = [],
        payload: [UInt8]?
    ) {
        self.id = id; self.type = type; self.schemaVersion = schemaVersion; self.recordedAt = recordedAt; self.stream = stream
        self.metadata = metadata; self.payload = payload
    }
}

/// What an append did: the event's seq and id, and whether it was new.
public struct AppendResult: Sendable, Hashable {
    public var seq: UInt64
    public var id: String
    public var appended: Bool
    public init(seq: UInt64, id: String, appended: Bool) { self.seq = seq; self.id = id; self.appended = appended }
}

/// What a compaction did.
public struct Compaction: Sendable, Hashable {
    public var path: String
    public var events: UInt64
    public var bytesBefore: Int
    public var bytesAfter: Int
    public init(path: String, events: UInt64, bytesBefore: Int, bytesAfter: Int) {
        self.path = path; self.events = events; self.bytesBefore = bytesBefore; self.bytesAfter = bytesAfter
    }
}

/// A replacement of the store by a copy of it (compact, rekey): done now, or the cleanup of one
/// an earlier run swapped in and stopped before finishing.
public enum Replacement<Result: Sendable>: Sendable {
    case done(Result)
    case finishedEarlierSwap
}
