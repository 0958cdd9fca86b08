/// How far a step over the log has come: a projection catching up or being rebuilt, or a copy.
package struct CatchUpProgress: Sendable, Hashable {
    package var projection: String
    package var applied: UInt64
    package var head: UInt64
    package init(projection: String, applied: UInt64, head: UInt64) { self.projection = projection; self.applied = applied; self.head = head }
}

/// The last event of a log: its seq and hash (hex).
package struct LogHead: Sendable, Hashable {
    package var seq: UInt64
    package var hash: String
    package init(seq: UInt64, hash: String) { self.seq = seq; self.hash = hash }
}

/// What a check of the store found: the hash chain, the bodies and each projection against a
/// rebuild of it.
package struct StoreVerification: Sendable {
    package struct ProjectionCheck: Sendable {
        package var name: String
        package var checkpoint: UInt64
        package var matchesRebuild: Bool
        package var differences: [String]
        /// A digest of the projection's tables, the same on every store with the same log.
        package var digest: String
        package init(name: String, checkpoint: UInt64, matchesRebuild: Bool, differences: [String], digest: String) {
            self.name = name; self.checkpoint = checkpoint; self.matchesRebuild = matchesRebuild; self.differences = differences; self.digest = digest
        }
    }

    package var headSeq: UInt64
    package var eventsChecked: UInt64
    package var bodiesChecked: Int
    /// The first problems found, and how many there were in all.
    package var problems: [String]
    package var problemCount: Int
    package var projections: [ProjectionCheck]
    package var quarantined: [QuarantinedEntry]
    /// Bodies rewritten in place by erasures, checked consistent, by the erasure's seq.
    package var rewrites: [Rewrite] = []

    package struct Rewrite: Sendable, Hashable {
        package var seq: UInt64
        package var eventType: String
        package var bodies: Int
        package init(seq: UInt64, eventType: String, bodies: Int) { self.seq = seq; self.eventType = eventType; self.bodies = bodies }
        /// "3 bodies rewritten by seq 42 (forget)".
        package var summary: String {
            let what = eventType == "ItemForgotten" ? "forget" : eventType == "RetentionApplied" ? "retention" : eventType
            return "\(bodies) \(bodies == 1 ? "body" : "bodies") rewritten by seq \(seq) (\(what))"
        }
    }

    package init(
        headSeq: UInt64, eventsChecked: UInt64, bodiesChecked: Int, problems: [String], problemCount: Int, projections: [ProjectionCheck],
        quarantined: [QuarantinedEntry]
    ) {
        self.headSeq = headSeq; self.eventsChecked = eventsChecked; self.bodiesChecked = bodiesChecked; self.problems = problems
        self.problemCount = problemCount; self.projections = projections; self.quarantined = quarantined
    }

    /// Nothing is wrong with the chain, the bodies or a projection.
    package var ok: Bool { problemCount == 0 && projections.allSatisfy(\.matchesRebuild) }
}

/// An event a projection could not fold, set aside with the reason.
package struct QuarantinedEntry: Sendable, Hashable {
    package var projection: String
    package var seq: UInt64
    package var reason: String
    package init(projection: String, seq: UInt64, reason: String) { self.projection = projection; self.seq = seq; self.reason = reason }
}

/// The store's size and shape: events, bodies and their deduplication, projections, the map.
package struct StoreStatistics: Sendable {
    package struct Projection: Sendable {
        package var name: String
        package var version: Int
        package var checkpoint: UInt64
        package var lag: UInt64
        package var quarantined: Int
        package var tables: [Table]
        package init(name: String, version: Int, checkpoint: UInt64, lag: UInt64, quarantined: Int, tables: [Table]) {
            self.name = name; self.version = version; self.checkpoint = checkpoint; self.lag = lag; self.quarantined = quarantined; self.tables = tables
        }
    }

    package struct Table: Sendable {
        package var name: String
        package var entries: Int
        package var bytes: Int
        package init(name: String, entries: Int, bytes: Int) { self.name = name; self.entries = entries; self.bytes = bytes }
    }

    package var path: String
    package var events: Int
    package var headSeq: UInt64
    package var headHash: String
    /// What sources' retention has dropped so far, each source's latest horizon with the totals.
    package var retention: [RetentionDrop] = []
    package var logBytes: Int
    package var indexBytes: Int
    package var bodies: Int
    package var bodyRawBytes: UInt64
    package var bodyStoredBytes: UInt64
    package var payloadBytes: UInt64
    package var payloadCount: UInt64
    package var dedupeRatio: Double
    package var compressionRatio: Double
    package var mapSize: Int
    package var usedBytes: Int
    package var fileBytes: Int
    package var freeBytes: Int
    package var staleReadersCleared: Int
    package var projections: [Projection]

    package init(
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
package struct NewLogEntry: Sendable {
    /// A deterministic id makes the append idempotent; nil draws a random one.
    package var id: String?
    package var type: String
    package var schemaVersion: Int
    package var recordedAt: LogTime?
    package var stream: String
    package var metadata: [(key: String, value: String)]
    package var payload: [UInt8]?
    package init(
        id: String?, type: String, schemaVersion: Int = 1, recordedAt: LogTime? = nil, stream: String, metadata: [(key: String, value: String)] = [],
        payload: [UInt8]?
    ) {
        self.id = id; self.type = type; self.schemaVersion = schemaVersion; self.recordedAt = recordedAt; self.stream = stream
        self.metadata = metadata; self.payload = payload
    }
}

/// What an append did: the event's seq and id, and whether it was new.
package struct AppendResult: Sendable, Hashable {
    package var seq: UInt64
    package var id: String
    package var appended: Bool
    package init(seq: UInt64, id: String, appended: Bool) { self.seq = seq; self.id = id; self.appended = appended }
}

/// What a compaction did.
package struct Compaction: Sendable, Hashable {
    package var path: String
    package var events: UInt64
    package var bytesBefore: Int
    package var bytesAfter: Int
    /// What sources' retention dropped before the copy was made.
    package var retention: [RetentionDrop] = []
    package init(path: String, events: UInt64, bytesBefore: Int, bytesAfter: Int) {
        self.path = path; self.events = events; self.bytesBefore = bytesBefore; self.bytesAfter = bytesAfter
    }
}

/// A replacement of the store by a copy of it (compact, rekey): done now, or the cleanup of one
/// an earlier run swapped in and stopped before finishing.
package enum Replacement<Result: Sendable>: Sendable {
    case done(Result)
    case finishedEarlierSwap
}

/// What one source's retention dropped: the bodies only events before its horizon carried.
package struct RetentionDrop: Sendable, Hashable {
    package var source: String
    /// The `RetentionApplied` event's seq, and the first seq kept.
    package var seq: UInt64
    package var horizon: UInt64
    package var bodies: Int
    package var bytes: Int
    package init(source: String, seq: UInt64, horizon: UInt64, bodies: Int, bytes: Int) {
        self.source = source; self.seq = seq; self.horizon = horizon; self.bodies = bodies; self.bytes = bytes
    }
}
