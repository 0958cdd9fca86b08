public import EventStore
import Foundation

/// The events of recorded traffic (`strata proxy`, HAR and WARC imports).
///
/// | type | stream | metadata | payload |
/// |---|---|---|---|
/// | `RequestBodyRecorded` | source | `source`, `exchange` (the exchange's event id) | the request body, appended right before its exchange in one batch |
/// | `ExchangeRecorded` | source | `source`, `origin` (proxy/har/warc), `method`, `url`, `http`, `requestHeaders` and `responseHeaders` (JSON `[[name, value]]`, credentials masked), `requestBody`? (its SHA-256) and `requestBytes`?, `status`, `statusText`?, `noBody`? (`true`: recorded without a body), `waitUs`?, `durationUs` | the response body |
/// | `ExchangeFailed` | source | the request's keys as above, `error`, `message`, `durationUs` | none |
public enum TrafficEvents {
    public static let requestBodyRecorded = "RequestBodyRecorded"
    public static let exchangeRecorded = "ExchangeRecorded"
    public static let exchangeFailed = "ExchangeFailed"

    /// The events that store `exchange` (its credentials masked by the caller): the request
    /// body's event first when there is a body.
    public static func events(_ x: ExchangeEntity) -> [NewEvent] {
        let id = x.id ?? RandomID.uuid()
        var meta: [(key: String, value: String)] = [
            ("source", x.source), ("origin", x.origin), ("method", x.method), ("url", x.url), ("http", x.httpVersion),
            ("requestHeaders", encode(x.requestHeaders))
        ]
        var out: [NewEvent] = []
        if let body = x.requestBody, !body.isEmpty {
            meta.append(("requestBody", RequestKey.bodyDigest(body)))
            meta.append(("requestBytes", String(body.count)))
            out.append(
                NewEvent(
                    id: id + "/request", type: requestBodyRecorded, recordedAt: x.startedAt, stream: x.source,
                    metadata: [("source", x.source), ("exchange", id)], payload: body))
        }
        switch x.outcome {
        case let .response(status, statusText, headers, body):
            meta.append(("status", String(status)))
            if let statusText, !statusText.isEmpty { meta.append(("statusText", statusText)) }
            meta.append(("responseHeaders", encode(headers)))
            if body == nil { meta.append(("noBody", "true")) }
            if let w = x.waitMicros { meta.append(("waitUs", String(w))) }
            meta.append(("durationUs", String(x.totalMicros)))
            out.append(NewEvent(id: id, type: exchangeRecorded, recordedAt: x.startedAt, stream: x.source, metadata: meta, payload: body ?? []))
        case let .failure(code, message):
            meta.append(("error", code))
            meta.append(("message", message))
            meta.append(("durationUs", String(x.totalMicros)))
            out.append(NewEvent(id: id, type: exchangeFailed, recordedAt: x.startedAt, stream: x.source, metadata: meta))
        }
        return out
    }

    /// The request key an exchange event is replayed by (nil for other events).
    public static func requestKey(_ event: RecordedEvent) -> (host: String, key: String)? {
        guard event.type == exchangeRecorded || event.type == exchangeFailed, let url = event[metadata: "url"],
            let (host, target) = RecordingIndex.split(url)
        else { return nil }
        let method = event[metadata: "method"] ?? "GET"
        guard let digest = event[metadata: "requestBody"] else { return (host, RequestKey.make(method: method, target: target, body: nil)) }
        let m = method.uppercased()
        return (host, m + " " + target + " sha256:" + String(digest.prefix(16)))
    }

    /// An exchange event read back; `body` is its payload and `requestBody` the body its
    /// `requestBody` digest names.
    public static func entity(_ event: RecordedEvent, body: [UInt8]?, requestBody: [UInt8]?) -> ExchangeEntity? {
        guard event.type == exchangeRecorded || event.type == exchangeFailed, let url = event[metadata: "url"] else { return nil }
        let outcome: ExchangeEntity.Outcome
        if event.type == exchangeFailed {
            outcome = .failure(code: event[metadata: "error"] ?? "failed", message: event[metadata: "message"] ?? "the exchange failed")
        } else {
            outcome = .response(
                status: event[metadata: "status"].flatMap(Int.init) ?? 200, statusText: event[metadata: "statusText"],
                headers: decode(event[metadata: "responseHeaders"]), body: event[metadata: "noBody"] == "true" ? nil : (body ?? []))
        }
        var x = ExchangeEntity(
            id: event.id, source: event.stream, method: event[metadata: "method"] ?? "GET", url: url, httpVersion: event[metadata: "http"] ?? "HTTP/1.1",
            requestHeaders: decode(event[metadata: "requestHeaders"]), requestBody: requestBody, startedAt: event.recordedAt, outcome: outcome,
            waitMicros: event[metadata: "waitUs"].flatMap(Int64.init), totalMicros: event[metadata: "durationUs"].flatMap(Int64.init) ?? 0,
            origin: event[metadata: "origin"] ?? "proxy")
        x.seq = event.seq
        x.eventType = event.type
        return x
    }

    static func encode(_ lines: [HeaderLine]) -> String {
        let array = lines.map { [$0.name, $0.value] }
        guard let d = try? JSONSerialization.data(withJSONObject: array, options: [.withoutEscapingSlashes]) else { return "[]" }
        return String(decoding: d, as: UTF8.self)
    }

    static func decode(_ text: String?) -> [HeaderLine] {
        guard let text, let a = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]] else { return [] }
        return a.compactMap { $0.count == 2 ? HeaderLine($0[0], $0[1]) : nil }
    }
}
