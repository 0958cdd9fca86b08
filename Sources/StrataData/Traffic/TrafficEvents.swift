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
        return (host, RequestKey.make(method: event[metadata: "method"] ?? "GET", target: target, bodyDigest: event[metadata: "requestBody"]))
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

    /// `[["name","value"],…]`, compact JSON. By hand, like `decode`: the proxy writes it for every
    /// exchange twice, and `JSONSerialization` was a tenth of the proxy's CPU.
    package static func encode(_ lines: [HeaderLine]) -> String {
        var out: [UInt8] = [0x5B]
        out.reserveCapacity(lines.reduce(2) { $0 + $1.name.utf8.count + $1.value.utf8.count + 8 })
        func string(_ s: String) {
            out.append(0x22)
            for b in s.utf8 {
                switch b {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, 0x6E]
                case 0x0D: out += [0x5C, 0x72]
                case 0x09: out += [0x5C, 0x74]
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]]
                default: out.append(b)
                }
            }
            out.append(0x22)
        }
        for (i, line) in lines.enumerated() {
            if i > 0 { out.append(0x2C) }
            out.append(0x5B)
            string(line.name)
            out.append(0x2C)
            string(line.value)
            out.append(0x5D)
        }
        out.append(0x5D)
        return String(decoding: out, as: UTF8.self)
    }

    /// The response headers of an `ExchangeRecorded` event (what replay needs, without the rest).
    public static func responseHeaders(_ event: RecordedEvent) -> [HeaderLine] { decode(event[metadata: "responseHeaders"]) }

    /// `[["name", "value"], …]` as `encode` writes it. By hand: replay reads it for every answer,
    /// and `JSONSerialization` took a tenth of a replayed request's time.
    package static func decode(_ text: String?) -> [HeaderLine] {
        guard let text else { return [] }
        var bytes = Array(text.utf8)[...]
        func skipSpace() { while let b = bytes.first, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { bytes.removeFirst() } }
        func take(_ c: UInt8) -> Bool {
            skipSpace()
            guard bytes.first == c else { return false }
            bytes.removeFirst()
            return true
        }
        func string() -> String? {
            guard take(0x22) else { return nil }
            var out: [UInt8] = []
            while let b = bytes.popFirst() {
                switch b {
                case 0x22: return String(decoding: out, as: UTF8.self)
                case 0x5C:
                    guard let e = bytes.popFirst() else { return nil }
                    switch e {
                    case 0x6E: out.append(0x0A)
                    case 0x74: out.append(0x09)
                    case 0x72: out.append(0x0D)
                    case 0x62: out.append(0x08)
                    case 0x66: out.append(0x0C)
                    case 0x75:
                        guard bytes.count >= 4, let v = UInt32(String(decoding: bytes.prefix(4), as: UTF8.self), radix: 16) else { return nil }
                        bytes.removeFirst(4)
                        var scalar = v
                        // A surrogate pair: the low half follows as another \uXXXX.
                        if (0xD800..<0xDC00).contains(v), bytes.count >= 6, bytes.first == 0x5C,
                            let low = UInt32(String(decoding: bytes.dropFirst(2).prefix(4), as: UTF8.self), radix: 16), (0xDC00..<0xE000).contains(low)
                        {
                            bytes.removeFirst(6)
                            scalar = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                        }
                        out += Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                    default: out.append(e)
                    }
                default: out.append(b)
                }
            }
            return nil
        }
        var lines: [HeaderLine] = []
        guard take(0x5B) else { return [] }
        if take(0x5D) { return [] }
        repeat {
            guard take(0x5B), let name = string(), take(0x2C), let value = string(), take(0x5D) else { return lines }
            lines.append(HeaderLine(name, value))
        } while take(0x2C)
        return lines
    }
}
