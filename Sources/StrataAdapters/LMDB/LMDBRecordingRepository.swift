package import StrataDomain
package import EventStore
import Foundation
package import StrataData
import Synchronization

/// ``RecordingRepository`` over the `recordings` index: each lookup (index rows, the event, its
/// body) is one read snapshot, so a client served during another process's fetch sees one
/// consistent log.
package struct LMDBRecordingRepository: RecordingRepository {
    let store: EventStore
    let catalog: SourceCatalog
    /// What a recording's event holds, by seq: an event never changes, so what was read once (its
    /// decompressed body, its decoded headers) serves every later request for it.
    let contents = ContentCache(budget: 64 << 20)

    package init(store: EventStore, catalog: SourceCatalog) {
        self.store = store
        self.catalog = catalog
    }

    /// The part of a recording its event gives.
    struct Content: Sendable {
        var url: String
        var source: String
        var eventType: String
        var outcome: Recording.Outcome
        var bytes: Int
    }

    /// Contents of recent recordings, up to `budget` bytes of bodies (the oldest go first).
    final class ContentCache: Sendable {
        private struct State {
            var entries: [UInt64: Content] = [:]
            var order: [UInt64] = []
            var head = 0
            var bytes = 0
        }
        private let state = Mutex(State())
        let budget: Int
        init(budget: Int) { self.budget = budget }

        func get(_ seq: UInt64) -> Content? { state.withLock { $0.entries[seq] } }

        func put(_ seq: UInt64, _ c: Content) {
            guard c.bytes <= budget / 8 else { return }
            state.withLock { s in
                guard s.entries[seq] == nil else { return }
                s.entries[seq] = c
                s.order.append(seq)
                s.bytes += c.bytes
                while s.bytes > budget, s.head < s.order.count {
                    if let old = s.entries.removeValue(forKey: s.order[s.head]) { s.bytes -= old.bytes }
                    s.head += 1
                }
                if s.head > 4096 {
                    s.order.removeFirst(s.head)
                    s.head = 0
                }
            }
        }
    }

    private enum Direction: Sendable { case atMost(PointInTime), after(UInt64) }

    package func requestKey(method: String, target: String, body: [UInt8]?) -> String {
        RequestKey.make(method: method, target: target, body: body)
    }

    package func bodyDigest(_ body: [UInt8]) -> String { RequestKey.bodyDigest(body) }

    package func redactedRequestBodies(_ body: [UInt8], headers: [(name: String, value: String)]) async throws -> [[UInt8]] {
        let headers = headers.map { HeaderLine($0.name, $0.value) }
        var out: [[UInt8]] = []
        for source in try await catalog.all() where !(source.redact ?? []).isEmpty {
            // A lookup, not a write: the store's key as it is, confirmed or not.
            let redactor = Redactor(key: try await store.redactionKey(), paths: source.redact ?? [], headers: source.redactHeaders ?? [])
            let redacted = redactor.recorded(body, headers: headers).body
            if redacted != body && !out.contains(redacted) { out.append(redacted) }
        }
        return out
    }

    package func recording(target: String, host: String?, at point: PointInTime, sources: Set<String>) async throws -> RecordingLookup {
        try await lookup(target: target, host: host, .atMost(point), sources: sources)
    }

    package func recording(target: String, host: String?, after seq: UInt64, sources: Set<String>) async throws -> RecordingLookup {
        try await lookup(target: target, host: host, .after(seq), sources: sources)
    }

    /// A lookup's answer, or a seq after the head (thrown outside the snapshot, which would wrap it).
    private enum Answer: Sendable { case lookup(RecordingLookup), afterHead(seq: UInt64, head: UInt64) }

    private func lookup(target: String, host: String?, _ direction: Direction, sources: Set<String>) async throws -> RecordingLookup {
        let answer: Answer = try await storage { try await self.answer(target: target, host: host, direction, sources: sources) }
        switch answer {
        case .lookup(let l): return l
        case .afterHead(let seq, let head): throw RepositoryError(.invalidQuery, "seq \(seq) is after the newest event (\(head))", next: .readLog)
        }
    }

    /// The index of one target on one host, seen through a set of sources: a recording of another
    /// source is stepped over, so several sources recording one request each keep their own
    /// history of it.
    private struct SourceView {
        let index: RecordingIndex.Reader
        let snap: LogSnapshot
        let target: String
        let host: String
        let sources: Set<String>

        private func accepted(_ e: RecordingIndex.Entry?, then step: (RecordingIndex.Entry) throws -> RecordingIndex.Entry?) throws -> RecordingIndex.Entry? {
            var e = e
            while let entry = e, !sources.isEmpty {
                if let event = try snap.event(seq: entry.seq), sources.contains(event.stream) { return entry }
                e = try step(entry)
            }
            return e
        }

        func atMost(_ seq: UInt64) throws -> RecordingIndex.Entry? {
            try accepted(index.recording(target: target, host: host, atMost: seq)) { try index.recording(target: target, host: host, before: $0.seq) }
        }

        func after(_ seq: UInt64) throws -> RecordingIndex.Entry? {
            try accepted(index.recording(target: target, host: host, after: seq)) { try index.recording(target: target, host: host, after: $0.seq) }
        }

        func before(_ seq: UInt64) throws -> RecordingIndex.Entry? { seq > 0 ? try atMost(seq - 1) : nil }
    }

    private func answer(target: String, host: String?, _ direction: Direction, sources: Set<String>) async throws -> Answer {
        try await store.snapshot { snap in
            let index = try RecordingIndex.Reader(snap)
            let hosts = try host.map { [$0] } ?? index.hosts(target: target)
            guard let host = hosts.first else { return .lookup(.notFetched(target: target, host: nil, first: nil)) }
            guard hosts.count == 1 else { return .lookup(.ambiguous(target: target, hosts: hosts)) }
            let view = SourceView(index: index, snap: snap, target: target, host: host, sources: sources)
            let found: RecordingIndex.Entry?
            switch direction {
            case .atMost(.now):
                found = try view.atMost(.max)
            case .atMost(.seq(let seq)):
                let head = try snap.head()
                guard seq <= head else { return .afterHead(seq: seq, head: head) }
                found = try view.atMost(seq)
            case .atMost(.date(let date)):
                found = try view.atMost(try snap.seq(asOf: Timestamp(date)))
            case .after(let seq):
                found = try view.after(seq)
            }
            let first = try view.after(0)
            guard let entry = found, let first, let last = try view.atMost(.max),
                let content = try contents.get(entry.seq) ?? Self.content(entry, snap)
            else {
                return .lookup(.notFetched(target: target, host: host, first: first.map(Self.ref)))
            }
            contents.put(entry.seq, content)
            return .lookup(
                .found(
                    Recording(
                        seq: entry.seq, recordedAt: entry.recordedAt.date, url: content.url, host: host, target: target,
                        source: content.source, eventType: content.eventType, outcome: content.outcome, first: Self.ref(first),
                        previous: try view.before(entry.seq).map(Self.ref), next: try view.after(entry.seq).map(Self.ref), last: Self.ref(last))))
        }
    }

    /// What the event of an index entry says; nil when the event is gone.
    private static func content(_ entry: RecordingIndex.Entry, _ snap: LogSnapshot) throws -> Content? {
        guard let event = try snap.event(seq: entry.seq) else { return nil }
        let outcome: Recording.Outcome
        if entry.isErased, let by = try snap.rewrittenBy(event), let erasure = try snap.event(seq: by) {
            let doc = try snap.payload(of: erasure).flatMap { try? JSONValue(parsing: $0) }
            let reason: String =
                if erasure.type == DataEvents.retentionApplied {
                    "before the retention horizon (seq \(erasure[metadata: "horizon"] ?? "?")) of \(erasure.stream)"
                } else if case .string(let r)? = doc?.value(atPath: "reason") { r } else { "" }
            outcome = .erased(seq: by, reason: reason)
        } else if event.type == TrafficEvents.exchangeFailed {
            outcome = .failure(status: nil, error: event[metadata: "error"] ?? "failed", message: event[metadata: "message"] ?? "the exchange failed")
        } else if event.type == TrafficEvents.exchangeRecorded {
            outcome = .exchange(
                status: event[metadata: "status"].flatMap(Int.init) ?? 200,
                headers: TrafficEvents.responseHeaders(event).map { HeaderField($0.name, $0.value) }, body: try snap.payload(of: event) ?? [])
        } else if entry.isFailure {
            outcome = .failure(
                status: event[metadata: "status"].flatMap(Int.init), error: event[metadata: "error"] ?? "failed",
                message: event[metadata: "message"] ?? "the fetch failed")
        } else {
            let body = try snap.payload(of: event) ?? []
            let status = event[metadata: "status"].flatMap(Int.init).map { $0 == 304 ? 200 : $0 } ?? 200
            let type = event[metadata: "contentType"] ?? (event.type == DataEvents.imageFetched ? "application/octet-stream" : "application/json")
            outcome = .response(status: status, contentType: type, etag: event[metadata: "etag"], lastModified: event[metadata: "lastModified"], body: body)
        }
        var bytes = 256
        switch outcome {
        case .response(_, _, _, _, let body), .exchange(_, _, let body): bytes += body.count
        case .failure, .erased: break
        }
        return Content(url: event[metadata: "url"] ?? "", source: event.stream, eventType: event.type, outcome: outcome, bytes: bytes)
    }

    private static func ref(_ e: RecordingIndex.Entry) -> Recording.Ref { Recording.Ref(seq: e.seq, recordedAt: e.recordedAt.date) }

    /// A run starts with its first page (`page` 1, or a `ListNotModified`) and ends where the next
    /// one starts (its details and images come after its `FetchCompleted`); the last run ends at
    /// the head.
    package func runEnd(after seq: UInt64) async throws -> UInt64? {
        try await storage {
            let head = try await store.head().seq
            guard head > seq else { return nil }
            // The run that holds seq + 1 ends right before the first run start after it.
            var start: UInt64?
            for type in [DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.listNotModified] {
                var from = seq + 2
                while from <= min(head, start ?? .max) {
                    let chunk = try await store.events(EventQuery(type: type, fromSeq: from, toSeq: start ?? .max, limit: 256, descending: false))
                    if let first = chunk.first(where: { $0.type == DataEvents.listNotModified || ($0[metadata: "page"] ?? "1") == "1" }) {
                        start = first.seq
                        break
                    }
                    guard let last = chunk.last, chunk.count == 256 else { break }
                    from = last.seq + 1
                }
            }
            return start.map { $0 - 1 } ?? head
        }
    }
}
