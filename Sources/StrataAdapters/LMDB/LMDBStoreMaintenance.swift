package import EventStore
import StrataData
package import StrataDomain
import StrataJSON

/// ``StoreMaintenanceRepository`` and ``DocumentRepository`` over the opened event store.
package struct LMDBStoreMaintenance: StoreMaintenanceRepository, DocumentRepository {
    let store: EventStore

    package init(store: EventStore) {
        self.store = store
    }

    package func verify(checkProjections: Bool) async throws -> StoreVerification {
        StoreVerification(try await engine { try await store.verify(checkProjections: checkProjections) })
    }

    package func rebuild(_ projections: [String], progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> [String] {
        try await engine {
            try await store.rebuild(projections) { progress(CatchUpProgress(projection: $0.projection, applied: $0.applied, head: $0.head)) }
        }
        return projections.isEmpty ? store.projections.map(\.name) : projections
    }

    package func statistics() async throws -> StoreStatistics {
        var s = StoreStatistics(try await engine { try await store.stats() })
        var bySource: [String: RetentionDrop] = [:]
        for e in try await engine({ try await store.events(EventQuery(type: DataEvents.retentionApplied)) }) {
            let (bodies, bytes) = (Int(e[metadata: "bodies"] ?? "") ?? 0, Int(e[metadata: "bytes"] ?? "") ?? 0)
            var d = bySource[e.stream] ?? RetentionDrop(source: e.stream, seq: e.seq, horizon: 0, bodies: 0, bytes: 0)
            d.seq = e.seq
            d.horizon = max(d.horizon, UInt64(e[metadata: "horizon"] ?? "") ?? 0)
            d.bodies += bodies
            d.bytes += bytes
            bySource[e.stream] = d
        }
        s.retention = bySource.values.sorted { $0.source < $1.source }
        return s
    }

    package func append(_ entry: NewLogEntry) async throws -> AppendResult {
        let outcome = try await engine {
            try await store.append(
                NewEvent(
                    id: entry.id, type: entry.type, schemaVersion: entry.schemaVersion,
                    recordedAt: entry.recordedAt.map { Timestamp(microseconds: $0.microseconds) }, stream: entry.stream,
                    metadata: entry.metadata, payload: entry.payload))
        }
        return AppendResult(seq: outcome.seq, id: outcome.id, appended: outcome.appended)
    }

    package func seq(at point: LogPoint) async throws -> UInt64 {
        switch point {
        case .seq(let s): return s
        case .time(let t): return try await engine { try await store.seq(asOf: Timestamp(microseconds: t.microseconds)) }
        }
    }

    package func head() async throws -> UInt64 { try await engine { try await store.head().seq } }

    /// The first seq a source's collection keeps everything from, when `projection` keeps the
    /// source's fetched documents and its retention dropped anything: a read before it is
    /// refused as the item reads refuse it, never answered from what happens to remain.
    private func horizon(_ projection: String, _ collection: String) async throws -> UInt64? {
        guard ["items", "details", "images"].contains(projection) else { return nil }
        return try await engine { try await SourceRetention(store: store).horizon(source: collection) }
    }

    /// The horizon (0 when none), after refusing `seq` when it lies before it; nothing is read
    /// for a read of now (`seq` nil).
    @discardableResult
    private func refuseBeforeHorizon(_ projection: String, _ collection: String, _ seq: UInt64?) async throws -> UInt64 {
        guard seq != nil, let horizon = try await horizon(projection, collection) else { return 0 }
        if let seq, seq < horizon { throw LMDBItemRepository.beforeHorizon(seq, horizon, collection) }
        return horizon
    }

    package func documents(projection: String, collection: String, asOf seq: UInt64?, includeRemoved: Bool) async throws -> [KeyedDocument] {
        try await refuseBeforeHorizon(projection, collection, seq)
        return try await engine {
            try await store.documents(projection: projection) { try $0.states(collection: collection, asOf: seq, includeRemoved: includeRemoved) }
        }.map(KeyedDocument.init)
    }

    package func document(projection: String, collection: String, key: String, asOf seq: UInt64?) async throws -> KeyedDocument? {
        try await refuseBeforeHorizon(projection, collection, seq)
        return try await engine {
            try await store.documents(projection: projection) { try $0.state(collection: collection, key: key, asOf: seq) }
        }.map(KeyedDocument.init)
    }

    package func history(projection: String, collection: String, key: String, upTo seq: UInt64) async throws -> [KeyedDocumentVersion] {
        let horizon = try await refuseBeforeHorizon(projection, collection, seq)
        return try await engine {
            try await store.documents(projection: projection) { try $0.history(collection: collection, key: key, upTo: seq) }
        }.map(KeyedDocumentVersion.init).filter { $0.seq >= horizon }
    }

    package func diff(projection: String, collection: String, from: UInt64, to: UInt64) async throws -> [KeyedDocumentDiff] {
        try await refuseBeforeHorizon(projection, collection, min(from, to))
        return try await engine {
            try await store.documents(projection: projection) { try $0.diff(collection: collection, from: from, to: to) }
        }.map(KeyedDocumentDiff.init)
    }
}

extension StoreVerification {
    init(_ r: VerifyReport) {
        self.init(
            headSeq: r.headSeq, eventsChecked: r.eventsChecked, bodiesChecked: r.blobsChecked, problems: r.problems, problemCount: r.problemCount,
            projections: r.projections.map {
                ProjectionCheck(name: $0.name, checkpoint: $0.checkpoint, matchesRebuild: $0.matchesRebuild, differences: $0.differences, digest: $0.digest)
            },
            quarantined: r.quarantined.map { QuarantinedEntry(projection: $0.projection, seq: $0.seq, reason: $0.reason) })
        rewrites = r.rewrites.sorted { $0.key < $1.key }.map { Rewrite(seq: $0.key, eventType: $0.value.type, bodies: $0.value.bodies) }
    }
}

extension StoreStatistics {
    init(_ s: StoreStats) {
        self.init(
            path: s.path, events: s.events, headSeq: s.headSeq, headHash: s.headHash, logBytes: s.logBytes, indexBytes: s.indexBytes, bodies: s.blobs,
            bodyRawBytes: s.blobRawBytes, bodyStoredBytes: s.blobStoredBytes, payloadBytes: s.payloadBytes, payloadCount: s.payloadCount,
            dedupeRatio: s.dedupeRatio, compressionRatio: s.compressionRatio, mapSize: s.mapSize, usedBytes: s.usedBytes, fileBytes: s.fileBytes,
            freeBytes: s.freeBytes, staleReadersCleared: s.staleReadersCleared,
            projections: s.projections.map { p in
                Projection(
                    name: p.name, version: p.version, checkpoint: p.checkpoint, lag: p.lag, quarantined: p.quarantined,
                    tables: p.tables.map { Table(name: $0.name, entries: $0.entries, bytes: $0.bytes) })
            })
    }
}

extension KeyedDocument {
    init(_ s: DocumentState) {
        self.init(
            collection: s.collection, key: s.key, version: s.version, firstSeq: s.firstSeq, changedSeq: s.changedSeq, lastSeenSeq: s.lastSeenSeq,
            removed: s.removed, document: s.document)
    }
}

extension KeyedDocumentVersion {
    init(_ v: DocumentVersion) {
        self.init(
            collection: v.collection, key: v.key, version: v.version, seq: v.seq, recordedAt: LogTime(microseconds: v.recordedAt.microseconds),
            kind: StrataDomain.ChangeKind(rawValue: v.kind.rawValue)!, document: v.document, changes: v.changes)
    }
}

extension KeyedDocumentDiff {
    init(_ d: DocumentDiff) {
        self.init(key: d.key, kind: StrataDomain.ChangeKind(rawValue: d.kind.rawValue)!, before: d.before, after: d.after, changes: d.changes)
    }
}
