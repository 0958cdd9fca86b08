package import EventStore
import Foundation
import StrataData

/// ``RecordingRepository`` over the `recordings` index: each lookup (index rows, the event, its
/// body) is one read snapshot, so a client served during another process's fetch sees one
/// consistent log.
package struct LMDBRecordingRepository: RecordingRepository {
    let store: EventStore

    package init(store: EventStore) { self.store = store }

    private enum Direction: Sendable { case atMost(PointInTime), after(UInt64) }

    package func recording(target: String, host: String?, at point: PointInTime) async throws -> RecordingLookup {
        try await lookup(target: target, host: host, .atMost(point))
    }

    package func recording(target: String, host: String?, after seq: UInt64) async throws -> RecordingLookup {
        try await lookup(target: target, host: host, .after(seq))
    }

    /// A lookup's answer, or a seq after the head (thrown outside the snapshot, which would wrap it).
    private enum Answer: Sendable { case lookup(RecordingLookup), afterHead(seq: UInt64, head: UInt64) }

    private func lookup(target: String, host: String?, _ direction: Direction) async throws -> RecordingLookup {
        let answer: Answer = try await storage { try await self.answer(target: target, host: host, direction) }
        switch answer {
        case .lookup(let l): return l
        case .afterHead(let seq, let head): throw RepositoryError(.invalidQuery, "seq \(seq) is after the newest event (\(head)); see `strata log`")
        }
    }

    private func answer(target: String, host: String?, _ direction: Direction) async throws -> Answer {
        try await store.snapshot { snap in
            let index = try RecordingIndex.Reader(snap)
            let hosts = try host.map { [$0] } ?? index.hosts(target: target)
            guard let host = hosts.first else { return .lookup(.notFetched(target: target, host: nil, first: nil)) }
            guard hosts.count == 1 else { return .lookup(.ambiguous(target: target, hosts: hosts)) }
            let found: RecordingIndex.Entry?
            switch direction {
            case .atMost(.now):
                found = try index.recording(target: target, host: host, atMost: .max)
            case .atMost(.seq(let seq)):
                let head = try snap.head()
                guard seq <= head else { return .afterHead(seq: seq, head: head) }
                found = try index.recording(target: target, host: host, atMost: seq)
            case .atMost(.date(let date)):
                found = try index.recording(target: target, host: host, atMost: try snap.seq(asOf: Timestamp(date)))
            case .after(let seq):
                found = try index.recording(target: target, host: host, after: seq)
            }
            let first = try index.first(target: target, host: host)
            guard let entry = found, let first, let last = try index.last(target: target, host: host),
                let event = try snap.event(seq: entry.seq)
            else {
                return .lookup(.notFetched(target: target, host: host, first: first.map(Self.ref)))
            }
            let outcome: Recording.Outcome
            if event.type == TrafficEvents.exchangeRecorded || event.type == TrafficEvents.exchangeFailed {
                let x = TrafficEvents.entity(event, body: entry.isFailure ? nil : try snap.payload(of: event), requestBody: nil)
                switch x?.outcome {
                case let .response(status, _, headers, body)?:
                    outcome = .exchange(status: status, headers: headers.map { HeaderField($0.name, $0.value) }, body: body ?? [])
                case let .failure(code, message)?:
                    outcome = .failure(status: nil, error: code, message: message)
                case nil:
                    outcome = .failure(status: nil, error: "unreadable", message: "the recorded exchange could not be read")
                }
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
            return .lookup(
                .found(
                    Recording(
                        seq: entry.seq, recordedAt: entry.recordedAt.date, url: event[metadata: "url"] ?? "", host: host, target: target,
                        source: event.stream, eventType: event.type, outcome: outcome, first: Self.ref(first),
                        previous: try index.recording(target: target, host: host, before: entry.seq).map(Self.ref),
                        next: try index.recording(target: target, host: host, after: entry.seq).map(Self.ref), last: Self.ref(last))))
        }
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
