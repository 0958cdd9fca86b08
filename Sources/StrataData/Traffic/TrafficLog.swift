public import EventStore
import Foundation

/// Recorded traffic in the log: appends exchanges (credentials masked first) and reads a
/// source's exchanges back, its fetched pages, details and images included, for the HAR and
/// WARC exports.
public struct TrafficLog: Sendable {
    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// Appends `exchanges` in one transaction, through the source's `gate` (credentials and the
    /// source's headers masked, its paths redacted in JSON bodies). Events whose id is already in
    /// the log (a re-import) are skipped; returns how many were appended.
    @discardableResult
    public func record(_ exchanges: [ExchangeEntity], gate: IngestGate) async throws -> Int {
        guard !exchanges.isEmpty else { return 0 }
        var events: [NewEvent] = []
        events.reserveCapacity(exchanges.count)
        for x in exchanges { events += TrafficEvents.events(gate.exchange(x)) }
        let outcomes = try await store.append(events)
        return zip(events, outcomes).filter { $0.0.type != TrafficEvents.requestBodyRecorded && $0.1.appended }.count
    }

    public static let fetchTypes: Set<String> = [
        DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.detailFetched, DataEvents.detailNotModified,
        DataEvents.imageFetched, DataEvents.fetchFailed
    ]

    /// `source`'s exchanges up to `seq`, oldest first, a chunk at a time: recorded exchanges as
    /// they were, fetched pages, details and images as the GETs they were (a 304 kept as a 304
    /// without a body; snapshot imports, which were not HTTP exchanges, left out).
    public func exchanges(source: String, through seq: UInt64, chunk: Int = 256, _ visit: ([ExchangeEntity]) async throws -> Void) async throws {
        var from: UInt64 = 1
        while from <= seq {
            let events = try await store.events(EventQuery(stream: source, fromSeq: from, toSeq: seq, limit: chunk))
            guard let last = events.last else { break }
            var out: [ExchangeEntity] = []
            for e in events {
                if let x = try await exchange(e) { out.append(x) }
            }
            if !out.isEmpty { try await visit(out) }
            from = last.seq + 1
        }
    }

    /// The exchange an event records, if it records one.
    public func exchange(_ e: RecordedEvent) async throws -> ExchangeEntity? {
        if e.type == TrafficEvents.exchangeRecorded || e.type == TrafficEvents.exchangeFailed {
            let body = e.type == TrafficEvents.exchangeRecorded ? try await store.payload(of: e) : nil
            var request: [UInt8]?
            if let digest = e[metadata: "requestBody"] { request = try await store.body(sha256: digest) }
            return TrafficEvents.entity(e, body: body, requestBody: request)
        }
        guard Self.fetchTypes.contains(e.type), e[metadata: "import"] == nil, let url = e[metadata: "url"] else { return nil }
        let duration = e[metadata: "durationMs"].flatMap(Double.init).map { Int64($0 * 1000) } ?? 0
        var x = ExchangeEntity(
            id: e.id, source: e.stream, method: "GET", url: url, requestHeaders: [], requestBody: nil, startedAt: e.recordedAt,
            outcome: .failure(code: "failed", message: ""), totalMicros: duration, origin: "fetch")
        x.seq = e.seq
        x.eventType = e.type
        if e.type == DataEvents.fetchFailed {
            guard e[metadata: "status"] == nil else {
                // The API answered, with an error status: that answer is the exchange (its body was not kept).
                x.outcome = .response(status: Int(e[metadata: "status"]!) ?? 500, statusText: nil, headers: [], body: nil)
                return x
            }
            x.outcome = .failure(code: e[metadata: "error"] ?? "failed", message: e[metadata: "message"] ?? "the fetch failed")
            return x
        }
        var headers: [HeaderLine] = []
        let type = e[metadata: "contentType"] ?? (e.type == DataEvents.imageFetched ? nil : "application/json")
        if let type { headers.append(HeaderLine("Content-Type", type)) }
        if let etag = e[metadata: "etag"] { headers.append(HeaderLine("ETag", etag)) }
        if let lm = e[metadata: "lastModified"] { headers.append(HeaderLine("Last-Modified", lm)) }
        let status = e[metadata: "status"].flatMap(Int.init) ?? 200
        if status == 304 {
            x.outcome = .response(status: 304, statusText: "Not Modified", headers: headers, body: nil)
        } else {
            x.outcome = .response(status: status, statusText: nil, headers: headers, body: try await store.payload(of: e) ?? [])
        }
        return x
    }
}
