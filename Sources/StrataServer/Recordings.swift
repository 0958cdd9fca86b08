import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StrataDomain
import StrataJSON
import StrataPresentation

/// A request for a recorded URL, taken apart: `[/s/ID][/@POINT][/_host/HOST]/path?query`.
struct RecordedTarget: Sendable, Hashable {
    var session: String?
    /// The point named in the path (`/@42/…`, `/@2026-03-01T09:00:00Z/…`).
    var point: String?
    var host: String?
    /// The original URL's path and query.
    var target: String

    /// nil for a request target that is not a path.
    init?(_ raw: String) {
        guard raw.hasPrefix("/") else { return nil }
        var rest = Substring(raw)
        func segment(after prefix: String) -> String? {
            guard rest.hasPrefix(prefix) else { return nil }
            let after = rest.dropFirst(prefix.count)
            let end = after.firstIndex { $0 == "/" || $0 == "?" } ?? after.endIndex
            let value = String(after[..<end])
            rest = after[end...]
            return value.contains("%") ? (value.removingPercentEncoding ?? value) : value
        }
        session = segment(after: "/s/")
        point = segment(after: "/@")
        host = segment(after: "/_host/")
        target = rest.isEmpty ? "/" : rest.hasPrefix("?") ? "/" + rest : String(rest)
    }

    /// The path that names this target at another point (for `Link`), keeping the session and host.
    func path(at seq: UInt64?) -> String {
        var p = ""
        if let session { p += "/s/\(session)" }
        if let seq { p += "/@\(seq)" }
        if let host { p += "/_host/\(host)" }
        return p + target
    }
}

extension HTTPField.Name {
    static let acceptDatetime = HTTPField.Name("Accept-Datetime")!
    static let mementoDatetime = HTTPField.Name("Memento-Datetime")!
    static let strataAsOf = HTTPField.Name("Strata-As-Of")!
    static let strataSeq = HTTPField.Name("Strata-Seq")!
    static let strataSource = HTTPField.Name("Strata-Source")!
    static let strataEvent = HTTPField.Name("Strata-Event")!
    static let link = HTTPField.Name("Link")!
    static let strataRecorded = HTTPField.Name("Strata-Recorded")!
}

extension StrataServer {
    /// Where a request asks to be answered from, first match wins: the path's `/@POINT`, then
    /// `Accept-Datetime` (RFC 7089), then `Strata-As-Of`, then `--as-of`, then the head.
    /// Throws a response for a point that does not parse.
    func point(of t: RecordedTarget, headers: HTTPFields) throws(ResponseError) -> PointInTime {
        if let text = t.point {
            guard let p = PointInTime(text: text) else {
                throw ResponseError(Self.error(.badRequest, "bad point", "/@\(text)/ is neither a seq nor an ISO 8601 date like /@2026-03-01T09:00:00Z/"))
            }
            return p
        }
        if let text = headers[.acceptDatetime] {
            guard let d = HTTPDate.parse(text) else {
                throw ResponseError(
                    Self.error(.badRequest, "bad Accept-Datetime", "Accept-Datetime '\(text)' is not an HTTP date like Sun, 01 Mar 2026 09:00:00 GMT"))
            }
            // HTTP dates name whole seconds: the second's last microsecond, so a client that sends
            // back a Memento-Datetime gets that memento, recorded within the second.
            return .date(d.addingTimeInterval(0.999_999))
        }
        if let text = headers[.strataAsOf] {
            guard let p = PointInTime(text: text) else {
                throw ResponseError(Self.error(.badRequest, "bad Strata-As-Of", "Strata-As-Of '\(text)' is neither a seq nor an ISO 8601 date"))
            }
            return p
        }
        return configuration.asOf ?? .now
    }

    func recorded(_ request: Request) async throws -> Response {
        guard let t = RecordedTarget(request.uri.description) else {
            return Self.error(.badRequest, "bad target", "request a path, e.g. /cars/offers?page=1")
        }
        if t.target.hasPrefix("/_strata/") {
            return Self.error(.notFound, "not found", "no such endpoint; see docs/cli.md (strata serve)")
        }
        // A request with a body is found by the body's digest too: collect it (a recorded body
        // is at most what `strata proxy` takes).
        var body: [UInt8]?
        if request.method != .get && request.method != .head {
            do {
                let buffer = try await request.body.collect(upTo: 64 << 20)
                if buffer.readableBytes > 0 { body = [UInt8](buffer: buffer) }
            } catch {
                return Self.error(.contentTooLarge, "request too large", "a request body of more than 64 MiB was never recorded")
            }
        }
        let serve = recordings
        // A HEAD is answered from a recorded HEAD, else from the GET of the same target.
        var keys = [serve.requestKey(method: request.method.rawValue, target: t.target, body: body)]
        if request.method == .head { keys.append(t.target) }
        var lookup: RecordingLookup = .notFetched(target: t.target, host: t.host, first: nil)
        do {
            // The first of `keys` that was recorded, else the last one's miss.
            func find(_ keys: [String]) async throws {
                for key in keys {
                    if let id = t.session {
                        lookup = try await sessionLookup(id, t, key: key)
                    } else {
                        lookup = try await serve(target: key, host: t.host, at: try point(of: t, headers: request.headers))
                    }
                    if case .notFetched(_, _, nil) = lookup { continue }
                    return
                }
            }
            try await find(keys)
            // Only a miss pays for the body as redacting sources would have stored it.
            if case .notFetched(_, _, nil) = lookup {
                try await find(
                    await serve.redactedKeys(
                        method: request.method.rawValue, target: t.target, body: body, headers: request.headers.map { ($0.name.rawName, $0.value) }))
            }
        } catch let r as ResponseError {
            return r.response
        } catch {
            return Self.error(error)
        }
        if case .notFetched(_, _, nil) = lookup, let recorder = configuration.onMiss {
            // Capture on miss: never recorded at all, so forwarded, recorded and answered.
            let headers = request.headers.map { HeaderField($0.name.rawName, $0.value) }
            let x = await recorder.forward(ForwardRequest(method: request.method.rawValue, target: t.target, headers: headers, body: body))
            var response = TrafficProxy.answer(x, head: request.method == .head)
            response.headers[.strataSource] = recorder.source
            response.headers[.strataRecorded] = "miss"
            return response
        }
        if case .notFetched(_, _, nil) = lookup, request.method != .get && request.method != .head {
            let what = body.map { " with this body (sha256 \(String(serve.bodyDigest($0).prefix(16))))" } ?? " without a body"
            return Self.error(
                .notFound, "not recorded", "\(request.method.rawValue) \(t.target)\(what) was never recorded; see /_strata/log?type=ExchangeRecorded",
                extra: ["target": .string(t.target), "method": .string(request.method.rawValue)])
        }
        if case .notFetched(_, let host, let first) = lookup {
            lookup = .notFetched(target: t.target, host: host, first: first)
        }
        return respond(lookup, t, request: request)
    }

    func respond(_ lookup: RecordingLookup, _ t: RecordedTarget, request: Request) -> Response {
        switch lookup {
        case .found(let r) where allows(r.source):
            return respond(r, t, request: request)
        case .found(let r):
            return notFetched(t, first: nil, note: "recorded for source \(r.source), which this server does not serve")
        case .notFetched(_, _, let first):
            return notFetched(t, first: first, note: nil)
        case .ambiguous(let target, let hosts):
            return Self.error(
                .multipleChoices, "several hosts", "\(target) was fetched from \(hosts.count) hosts: name one with /_host/HOST\(target)",
                extra: ["choices": .array(hosts.map { .string(RecordedTarget(host: $0, t).path(at: nil)) })])
        }
    }

    private func notFetched(_ t: RecordedTarget, first: Recording.Ref?, note: String?) -> Response {
        var extra: [String: JSONValue] = ["target": .string(t.target)]
        extra["firstFetched"] = first.map { .object(["seq": .number(String($0.seq)), "at": .string(ISOTime.format($0.recordedAt))]) } ?? .null
        let message =
            note
            ?? (first.map { "\(t.target) was not fetched yet at that point; it first was at seq \($0.seq) (\(ISOTime.format($0.recordedAt)))" }
                ?? "\(t.target) was never fetched; see /_strata/log for what was")
        return Self.error(.notFound, "not recorded", message, extra: extra)
    }

    private func respond(_ r: Recording, _ t: RecordedTarget, request: Request) -> Response {
        var h = HTTPFields()
        h[.mementoDatetime] = HTTPDate.format(r.recordedAt)
        h[.strataSeq] = String(r.seq)
        h[.strataSource] = r.source
        h[.strataEvent] = r.eventType
        h[.vary] = "Accept-Datetime, Strata-As-Of"
        h[.link] = links(r, t)
        switch r.outcome {
        case let .response(status, contentType, etag, lastModified, body):
            h[.contentType] = contentType
            if let etag { h[.eTag] = etag }
            if let lastModified { h[.lastModified] = lastModified }
            if let etag, let inm = request.headers[.ifNoneMatch], Self.matches(inm, etag) {
                return Response(status: .notModified, headers: h)
            }
            h[.contentLength] = String(body.count)
            let buffer = request.method == .head ? ByteBuffer() : ByteBuffer(bytes: body)
            return Response(status: HTTPResponse.Status(code: status), headers: h, body: ResponseBody(byteBuffer: buffer))
        case let .exchange(status, headers, body):
            if let etag = headers.value("ETag"), let inm = request.headers[.ifNoneMatch], (200..<300).contains(status), Self.matches(inm, etag) {
                return Self.replayed(status: 304, headers: headers, body: [], head: true, extra: h)
            }
            return Self.replayed(status: status, headers: headers, body: body, head: request.method == .head, extra: h)
        case let .erased(seq, reason):
            var response = Self.error(
                .gone, "erased", "erased at seq \(seq)\(reason.isEmpty ? "" : ": " + reason)",
                extra: ["seq": .number(String(seq)), "recorded": .bool(true)])
            for f in h { response.headers.append(f) }
            return response
        case let .failure(status, error, message):
            var response = Self.error(
                HTTPResponse.Status(code: status ?? 502), "recorded failure",
                "the fetch of \(r.url) failed then: \(message)",
                extra: [
                    "recorded": .bool(true), "seq": .number(String(r.seq)), "code": .string(error),
                    "status": status.map { .number(String($0)) } ?? .null
                ])
            for f in h { response.headers.append(f) }
            return response
        }
    }

    /// `If-None-Match`: `*`, or a list of entity tags compared weakly (RFC 9110 §13.1.2).
    static func matches(_ header: String, _ etag: String) -> Bool {
        func opaque(_ s: Substring) -> Substring { s.hasPrefix("W/") ? s.dropFirst(2) : s }
        let mine = opaque(Substring(etag))
        return header.split(separator: ",").contains { tag in
            let t = tag.trimmingCharacters(in: .whitespaces)
            return t == "*" || opaque(Substring(t)) == mine
        }
    }

    /// `Link` (RFC 7089): the original, and the first, previous, next and last recordings.
    private func links(_ r: Recording, _ t: RecordedTarget) -> String {
        func memento(_ ref: Recording.Ref, _ rel: String) -> String {
            "<\(t.path(at: ref.seq))>; rel=\"\(rel)\"; datetime=\"\(HTTPDate.format(ref.recordedAt))\""
        }
        var parts = ["<\(r.url)>; rel=\"original\"", memento(r.first, "first memento")]
        if let p = r.previous { parts.append(memento(p, "prev memento")) }
        if let n = r.next { parts.append(memento(n, "next memento")) }
        parts.append(memento(r.last, "last memento"))
        return parts.joined(separator: ", ")
    }
}

extension RecordedTarget {
    init(host: String, _ t: RecordedTarget) {
        self = t
        self.host = host
    }
}

/// A finished answer thrown out of a step that could not go on.
struct ResponseError: Error {
    var response: Response
    init(_ response: Response) { self.response = response }
}
