import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StrataDomain
import StrataJSON
import StrataPresentation

/// Replay sessions: `POST /_strata/sessions {"from": SEQ|DATE, "advance": "per-request"|"manual"}`
/// gives a path `/s/ID/`. Per request, each request of a URL gets the next recording of it, as
/// the API answered over time (the first, the one in force at `from`); manual, every URL is
/// served as of the session's point, which `POST /_strata/sessions/ID/step` moves to the end of
/// the next fetch run. Kept in memory, at most 1,024 (the oldest goes first).
actor ReplaySessions {
    enum Advance: String, Sendable { case perRequest = "per-request", manual }

    struct Session: Sendable {
        var id: String
        var from: UInt64
        var advance: Advance
        /// A manual session's point.
        var point: UInt64
        /// Per request: the seq last served for each host and target.
        var served: [String: UInt64] = [:]
    }

    private var sessions: [String: Session] = [:]
    private var order: [String] = []
    static let limit = 1024

    func create(from: UInt64, advance: Advance) -> Session {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        let id = bytes.map { String(format: "%02x", $0) }.joined()
        let s = Session(id: id, from: from, advance: advance, point: from)
        sessions[id] = s
        order.append(id)
        if order.count > Self.limit { sessions[order.removeFirst()] = nil }
        return s
    }

    func session(_ id: String) -> Session? { sessions[id] }
    func served(_ id: String, key: String, seq: UInt64) { sessions[id]?.served[key] = seq }
    func move(_ id: String, to seq: UInt64) { sessions[id]?.point = seq }
}

extension StrataServer {
    func addSessionRoutes(to router: Router<BasicRequestContext>) {
        router.post("/_strata/sessions") { request, _ in
            let body = try await request.body.collect(upTo: 64 << 10)
            let doc = body.readableBytes == 0 ? JSONValue.object([:]) : ((try? JSONValue(parsing: [UInt8](buffer: body))) ?? .null)
            guard case .object(let o) = doc else {
                return Self.error(.badRequest, "bad session", #"send a JSON object: {"from": 42, "advance": "per-request"}"#)
            }
            let advance: ReplaySessions.Advance
            switch o["advance"] {
            case nil: advance = .perRequest
            case .string(let a)?:
                guard let v = ReplaySessions.Advance(rawValue: a) else { return Self.error(.badRequest, "bad session", "advance is per-request or manual") }
                advance = v
            default: return Self.error(.badRequest, "bad session", "advance is per-request or manual")
            }
            let point: PointInTime
            switch o["from"] {
            case nil: point = self.configuration.asOf ?? .now
            case .number(let n)?:
                guard let seq = UInt64(n) else { return Self.error(.badRequest, "bad session", "from is a seq (a whole number) or an ISO 8601 date") }
                point = .seq(seq)
            case .string(let text)?:
                guard let p = PointInTime(text: text) else {
                    return Self.error(.badRequest, "bad session", "from '\(text)' is neither a seq nor an ISO 8601 date")
                }
                point = p
            default: return Self.error(.badRequest, "bad session", "from is a seq or an ISO 8601 date")
            }
            let from: UInt64
            do { from = try await self.recordings.resolve(point) } catch { return Self.error(error) }
            let s = await self.sessions.create(from: from, advance: advance)
            return Self.json(Self.json(s), status: .created, headers: [.location: "/s/\(s.id)/"])
        }
        router.get("/_strata/sessions/:id") { _, context in
            guard let id = Self.parameter(context, "id"), let s = await self.sessions.session(id) else { return Self.noSession() }
            return Self.json(Self.json(s))
        }
        router.post("/_strata/sessions/:id/step") { _, context in
            guard let id = Self.parameter(context, "id"), let s = await self.sessions.session(id) else { return Self.noSession() }
            guard s.advance == .manual else { return Self.error(.conflict, "not manual", "session \(id) advances per request; only manual sessions step") }
            let next: UInt64?
            do { next = try await self.recordings.nextRun(after: s.point) } catch { return Self.error(error) }
            if let next { await self.sessions.move(id, to: next) }
            var o = Self.json(await self.sessions.session(id) ?? s)
            if case .object(var fields) = o { fields["moved"] = .bool(next != nil); o = .object(fields) }
            return Self.json(o)
        }
    }

    static func noSession() -> Response {
        error(.notFound, "no session", "no such session (sessions live in the server's memory); create one with POST /_strata/sessions")
    }

    static func json(_ s: ReplaySessions.Session) -> JSONValue {
        .object([
            "id": .string(s.id), "path": .string("/s/\(s.id)/"), "from": .number(String(s.from)), "advance": .string(s.advance.rawValue),
            "point": s.advance == .manual ? .number(String(s.point)) : .null
        ])
    }

    /// The recording a session answers with (and, per request, the one it moves on to).
    /// `target` is the request key (the target, or the method, target and body digest).
    func sessionLookup(_ id: String, _ t: RecordedTarget, key target: String) async throws -> RecordingLookup {
        guard let s = await sessions.session(id) else { throw ResponseError(Self.noSession()) }
        let serve = recordings
        switch s.advance {
        case .manual:
            return try await serve.recording(target: target, host: t.host, at: s.point)
        case .perRequest:
            let key = (t.host ?? "") + " " + target
            var lookup: RecordingLookup
            if let last = s.served[key] {
                lookup = try await serve.recording(target: target, host: t.host, after: last)
                if case .notFetched = lookup { lookup = try await serve.recording(target: target, host: t.host, at: last) }  // the last stays
            } else {
                lookup = try await serve.recording(target: target, host: t.host, at: s.from)
                if case .notFetched(_, _, let first?) = lookup, first.seq > s.from {
                    lookup = try await serve.recording(target: target, host: t.host, after: s.from)
                }
            }
            if case .found(let r) = lookup { await sessions.served(id, key: key, seq: r.seq) }
            return lookup
        }
    }
}
