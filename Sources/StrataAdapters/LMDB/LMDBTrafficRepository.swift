package import StrataDomain
package import EventStore
import Foundation
import StrataJSON
package import StrataData

/// ``TrafficRepository`` over the log (``TrafficLog``) and the source catalog.
package struct LMDBTrafficRepository: TrafficRepository {
    let store: EventStore
    let catalog: SourceCatalog
    let traffic: TrafficLog
    /// Names the exports' creator (`strata 0.4`).
    let software: String

    package init(store: EventStore, catalog: SourceCatalog, software: String) {
        self.store = store
        self.catalog = catalog
        traffic = TrafficLog(store: store)
        self.software = software
    }

    /// What a source's traffic is stored through: the credentials always masked, the source's
    /// own redactions (read from its definition each time, so a change applies to the next
    /// exchange) and the `extra` headers named for this recording.
    private func gate(_ source: String, extra: [String]) async throws -> IngestGate {
        try await storage { try await IngestGate.traffic(try await catalog.get(source), named: source, extraHeaders: extra, store: store) }
    }

    package func prepareRecordedSource(_ source: String, upstream: String?) async throws {
        try await storage {
            if let d = try await catalog.get(source) {
                guard d.recorded == true else {
                    throw RepositoryError(
                        .invalidQuery,
                        "\(source) is a list source; record traffic into a source of its own (a new name makes a recorded source)")
                }
                return
            }
            var d = SourceDefinition(name: source, url: upstream ?? "")
            d.recorded = true
            try SourceSpec(d).validate()
            do { try await catalog.define(d) } catch SourceCatalogError.exists {
                // Another process made it a moment ago.
            }
        }
    }

    package func record(_ exchanges: [Exchange], source: String, redacting: [String]) async throws -> Int {
        let gate = try await gate(source, extra: redacting)
        return try await storage { try await traffic.record(exchanges.map { $0.entity(source: source, origin: "proxy") }, gate: gate) }
    }

    package func importFile(
        _ format: TrafficFormat, path: String, source: String, redacting: [String], progress: (@Sendable (Int64) -> Void)?
    ) async throws -> TrafficImport {
        let gate = try await gate(source, extra: redacting)
        let started = ContinuousClock.now
        let s: TrafficImportSummary
        do {
            switch format {
            case .har: s = try await traffic.importHAR(path: path, source: source, gate: gate)
            case .warc: s = try await traffic.importWARC(path: path, source: source, gate: gate, progress: progress)
            }
        } catch let e as FetchError {
            throw RepositoryError(e.code == .other ? .notFound : .invalidQuery, e.message, cause: e)
        }
        let d = ContinuousClock.now - started
        return TrafficImport(
            source: source, format: format, exchanges: s.exchanges, appended: s.appended, records: s.records, skipped: s.skipped,
            unresolvedRevisits: s.unresolvedRevisits, bytes: s.bytes,
            seconds: d.inSeconds)
    }

    package func exportFile(_ format: TrafficFormat, path: String, source: String, through seq: UInt64) async throws -> TrafficExport {
        let s: TrafficExportSummary
        do {
            switch format {
            case .har: s = try await traffic.exportHAR(source: source, through: seq, to: path, creator: software)
            case .warc:
                s = try await traffic.exportWARC(source: source, through: seq, to: path, software: "strata \(software)", now: Timestamp(Date()))
            }
        } catch let e as FetchError {
            throw RepositoryError(.invalidQuery, e.message, cause: e)
        }
        return TrafficExport(
            source: source, format: format, path: path, throughSeq: seq, exchanges: s.exchanges, failures: s.failures, records: s.records, bytes: s.bytes)
    }

    package func hasEvents(source: String) async throws -> Bool {
        try await storage { try await !store.events(EventQuery(stream: source, limit: 1)).isEmpty }
    }

    /// The streams to look at: `sources`, or every defined source.
    private func streams(_ sources: [String]) async throws -> [String] {
        sources.isEmpty ? try await catalog.all().map(\.name) : sources
    }

    package func changePoints(sources: [String], after: UInt64, through: UInt64) async throws -> [ChangePoint] {
        try await storage {
            var points: [ChangePoint] = []
            for source in try await streams(sources) {
                // What each URL (or request) answered last, to tell a change from a repeat.
                var last: [String: String] = [:]
                var runs: [String: (seq: UInt64, at: Timestamp, changed: Bool)] = [:]
                var from: UInt64 = 1
                while from <= through {
                    let chunk = try await store.events(EventQuery(stream: source, fromSeq: from, toSeq: through, limit: 1024))
                    guard let end = chunk.last else { break }
                    for e in chunk {
                        if let (host, key) = TrafficEvents.requestKey(e) {
                            let answer = Self.answer(e)
                            let changed = last[host + " " + key] != answer
                            last[host + " " + key] = answer
                            if e.seq > after && changed {
                                let method = e[metadata: "method"] ?? "GET"
                                points.append(
                                    ChangePoint(
                                        seq: e.seq, observedAt: e.recordedAt.date, source: source, kind: .exchange,
                                        label: "\(method) \(e[metadata: "url"] ?? "")"))
                            }
                            continue
                        }
                        guard let run = e[metadata: "run"] else { continue }
                        var changed = false
                        // Snapshot imports were no HTTP exchange: `serve` does not answer them.
                        if TrafficLog.fetchTypes.contains(e.type), e[metadata: "import"] == nil, let url = e[metadata: "url"], e[metadata: "status"] != "304" {
                            let answer = Self.answer(e)
                            changed = last[url] != answer
                            last[url] = answer
                        }
                        let r = runs[run]
                        runs[run] = (e.seq, e.recordedAt, (r?.changed ?? false) || changed)
                    }
                    from = end.seq + 1
                }
                for (run, r) in runs where r.changed && r.seq > after {
                    points.append(ChangePoint(seq: r.seq, observedAt: r.at.date, source: source, kind: .fetchRun, label: run))
                }
            }
            return points.sorted { $0.seq < $1.seq }
        }
    }

    /// What an event answered: its status and body digest.
    private static func answer(_ e: RecordedEvent) -> String {
        "\(e[metadata: "status"] ?? (e.type == DataEvents.fetchFailed || e.type == TrafficEvents.exchangeFailed ? "failed" : "200")) \(e.payload?.hash.hex ?? "-")"
    }

    package func responseChanges(sources: [String], after: UInt64, through: UInt64) async throws -> [ResponseChange] {
        try await storage {
            var out: [ResponseChange] = []
            for source in try await streams(sources) {
                var last: [String: (seq: UInt64, status: Int?, answer: String)] = [:]
                var from: UInt64 = 1
                while from <= through {
                    let chunk = try await store.events(EventQuery(stream: source, fromSeq: from, toSeq: through, limit: 1024))
                    guard let end = chunk.last else { break }
                    for e in chunk {
                        let key: String
                        let request: String
                        if let (host, k) = TrafficEvents.requestKey(e) {
                            key = host + " " + k
                            request = "\(e[metadata: "method"] ?? "GET") \(e[metadata: "url"] ?? "")"
                        } else if TrafficLog.fetchTypes.contains(e.type), e[metadata: "import"] == nil, let url = e[metadata: "url"] {
                            if e[metadata: "status"] == "304" { continue }
                            key = url
                            request = "GET \(url)"
                        } else {
                            continue
                        }
                        let status =
                            e.type == DataEvents.fetchFailed || e.type == TrafficEvents.exchangeFailed
                            ? e[metadata: "status"].flatMap(Int.init) : (e[metadata: "status"].flatMap(Int.init) ?? 200)
                        let answer = Self.answer(e)
                        let before = last[key]
                        last[key] = (e.seq, status, answer)
                        guard e.seq > after, before?.answer != answer else { continue }
                        // Only the newest change of a request in the range is reported.
                        out.removeAll { $0.source == source && $0.request == request }
                        out.append(
                            ResponseChange(
                                source: source, request: request, seq: e.seq, status: status, previousSeq: before?.seq, previousStatus: before?.status,
                                bodyChanged: before.map { $0.answer.split(separator: " ").last != answer.split(separator: " ").last } ?? true))
                    }
                    from = end.seq + 1
                }
            }
            return out.sorted { $0.seq < $1.seq }
        }
    }
}
