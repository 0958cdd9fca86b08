public import EventStore
import Foundation
public import Logging

/// How a push runs.
public struct PushOptions: Sendable {
    /// Writes in flight at once (writes to one item always go one after another).
    public var concurrency = 1
    public var timeout: Double = 30
    /// Extra attempts of a write after a 429 or 5xx.
    public var retries = 2
    public var baseBackoff: Double = 0.2
    /// How often a write is rebased on a server version that changed other fields.
    public var maxRebases = 3
    public var environment: [String: String] = ProcessInfo.processInfo.environment
    public init() {}
}

/// What a push did to one write.
public struct PushOutcome: Sendable, Hashable {
    public enum Result: String, Sendable { case acknowledged, rejected, conflicted, failed }
    public var write: UInt64
    public var kind: WriteKind
    public var key: String
    public var result: Result
    public var status: Int?
    public var message: String
    public var rebased: Int
}

/// What a push did.
public struct PushSummary: Sendable {
    public var outcomes: [PushOutcome] = []
    /// The server could not be reached (connection refused, timeout): the rest stays pending.
    public var offline: String?
    /// Open writes left in the outbox afterwards.
    public var left = 0
    public var duration: Duration = .zero

    public func count(_ r: PushOutcome.Result) -> Int { outcomes.count { $0.result == r } }
}

/// Sends a source's outbox to its API, in the order the writes were made; writes to one item go
/// one after another, writes to different items up to `concurrency` at once. Every request
/// carries the write's event id as `Idempotency-Key`, and every attempt and answer is an event:
/// `WriteSent` before the requests go (one append per round), then the answers (one append per
/// round). A write whose answer was lost (a crash, a cut connection) is sent again with the same
/// key, which the server answers as the first time: every write takes effect once.
///
/// A 412 (or a failed `test` when no ETag was known) reads the item again: when the fields the
/// write touches are as the write found them, the write is rebased on the new version (its
/// patch guarded by `test` operations of the values it expects) and sent again; otherwise it is
/// marked conflicted with the server's document kept beside it.
public final class Pusher: Sendable {
    let store: EventStore
    let client: any HTTPClient
    let logger: Logger

    public init(store: EventStore, client: any HTTPClient, logger: Logger = Logger(label: "strata.push")) {
        self.store = store
        self.client = client
        self.logger = logger
    }

    public func push(_ source: SourceDefinition, options: PushOptions = PushOptions()) async throws -> PushSummary {
        let started = ContinuousClock.now
        let outbox = OutboxTables(store: store)
        var summary = PushSummary()
        let headers = try source.resolvedHeaders(environment: options.environment, secrets: SourceSecrets(storePath: store.path))
        // The server's answers are stored through the source's gate, as fetched bodies are.
        let gate = try await IngestGate.of(source, store: store)
        var settledThisPush = Set<UInt64>()  // failed ones are not sent again in this push
        // The open writes are read once; each round's answers update this copy (reading them
        // again every round would parse every open write once per round).
        var open = try await outbox.open(source: source.name)
        var serverIds: [String: String] = [:]  // local key → the id a create's answer gave, this push
        while summary.offline == nil {
            // The first open write of each item, if it can go now.
            var seenKeys = Set<String>(), ready: [OutboxWrite] = []
            for w in open {
                guard seenKeys.insert(w.key).inserted else { continue }
                if w.state == .conflicted || settledThisPush.contains(w.seq) { continue }
                ready.append(w)
                if ready.count == max(1, options.concurrency) { break }
            }
            guard !ready.isEmpty else { break }
            // Each write's current key: an item created here goes by the id the server gave it.
            var targets: [(write: OutboxWrite, key: String)] = []
            var outcomes: [(events: [NewEvent], outcome: PushOutcome)] = []
            for w in ready {
                var key = w.key
                if w.kind != .create, w.key.hasPrefix("local-") {
                    if let id = serverIds[w.key] { key = id } else if let id = try await outbox.serverId(source: source.name, key: w.key) { key = id }
                }
                if w.kind != .create, key.hasPrefix("local-"), w.key == key {
                    // Its create never reached the server (rejected or dropped).
                    let reason = "the item was never created on the server (its create was rejected or dropped)"
                    outcomes.append(
                        (
                            [event(WriteEvents.rejected, source.name, key, w, [("reason", reason)])],
                            PushOutcome(write: w.seq, kind: w.kind, key: key, result: .rejected, status: nil, message: reason, rebased: 0)
                        ))
                    continue
                }
                guard source.accepts(w.kind) else {
                    let reason =
                        "source \(source.name) has no \(w.kind == .create ? "create" : w.kind == .patch ? "update" : "delete") URL to send this write to"
                    outcomes.append(
                        (
                            [event(WriteEvents.failed, source.name, key, w, [("attempt", String(w.attempts)), ("error", reason)])],
                            PushOutcome(write: w.seq, kind: w.kind, key: key, result: .failed, status: nil, message: reason, rebased: 0)
                        ))
                    settledThisPush.insert(w.seq)
                    continue
                }
                targets.append((w, key))
            }
            if !targets.isEmpty {
                _ = try await store.append(
                    targets.map { t in
                        event(
                            WriteEvents.sent, source.name, t.key, t.write,
                            [
                                ("attempt", String(t.write.attempts + 1)), ("method", method(source, t.write.kind)),
                                ("url", source.writeURL(t.write.kind, id: t.key) ?? "")
                            ])
                    })
                let delivered = await withTaskGroup(of: (Int, [NewEvent], PushOutcome).self) { group in
                    for (i, t) in targets.enumerated() {
                        group.addTask { [self] in
                            let (events, outcome) = await self.deliver(t.write, key: t.key, source: source, gate: gate, headers: headers, options: options)
                            return (i, events, outcome)
                        }
                    }
                    var out: [(Int, [NewEvent], PushOutcome)] = []
                    for await r in group { out.append(r) }
                    return out.sorted { $0.0 < $1.0 }
                }
                outcomes += delivered.map { ($0.1, $0.2) }
            }
            let events = outcomes.flatMap(\.events)
            if !events.isEmpty { _ = try await store.append(events) }
            let sent = Set(targets.map(\.write.seq))
            for (evs, o) in outcomes {
                if let i = open.firstIndex(where: { $0.seq == o.write }) {
                    switch o.result {
                    case .acknowledged, .rejected: open.remove(at: i)
                    case .conflicted: open[i].state = .conflicted
                    case .failed: if sent.contains(o.write) { open[i].attempts += 1 }
                    }
                }
                if o.kind == .create, let id = evs.last?.metadata.first(where: { $0.key == "serverId" })?.value,
                    let w = targets.first(where: { $0.write.seq == o.write })?.write
                {
                    serverIds[w.key] = id
                }
                summary.outcomes.append(o)
                if o.result == .failed {
                    settledThisPush.insert(o.write)
                    if o.status == nil, summary.offline == nil, o.message.contains("could not connect") || o.message.contains("no complete response") {
                        summary.offline = o.message
                    }
                }
            }
        }
        summary.left = try await outbox.open(source: source.name).count
        summary.duration = ContinuousClock.now - started
        return summary
    }

    private func method(_ source: SourceDefinition, _ kind: WriteKind) -> String {
        switch kind {
        case .create: "POST"
        case .patch: source.updateMethod ?? "PATCH"
        case .delete: "DELETE"
        }
    }

    private func event(_ type: String, _ source: String, _ key: String, _ w: OutboxWrite, _ extra: [(String, String)], payload: [UInt8]? = nil) -> NewEvent {
        NewEvent(
            type: type, stream: source, metadata: [("source", source), ("key", key), ("write", String(w.seq))] + extra.map { (key: $0.0, value: $0.1) },
            payload: payload)
    }

    /// Sends one write until it is answered: retried after 429/5xx, rebased after a 412 that
    /// touched nothing it changes. Returns the events to record and what happened.
    private func deliver(
        _ w: OutboxWrite, key: String, source: SourceDefinition, gate: IngestGate, headers: [(name: String, value: String)],
        options: PushOptions
    ) async -> ([NewEvent], PushOutcome) {
        var events: [NewEvent] = []
        // The ETag of the server's answer to an earlier write on the item is newer than the
        // edit's, unless a rebase or a forced retry set the edit's.
        var etag = w.baseETag
        if !w.force, w.rebased == 0, w.kind != .create, let known = try? await knownETag(source.name, key) { etag = known }
        var base = w.base  // what the touched fields are expected to hold on the server
        var guarded = false
        var rebased = 0, attempt = 0
        func outcome(_ r: PushOutcome.Result, _ status: Int?, _ message: String) -> PushOutcome {
            PushOutcome(write: w.seq, kind: w.kind, key: key, result: r, status: status, message: message, rebased: rebased)
        }
        while true {
            guard let request = request(w, key: key, source: source, headers: headers, etag: etag, base: base, guarded: &guarded, options: options) else {
                let reason = "the write cannot be expressed for this source"
                events.append(event(WriteEvents.rejected, source.name, key, w, [("reason", reason)]))
                return (events, outcome(.rejected, nil, reason))
            }
            let response: HTTPResponse
            do { response = try await client.send(request) } catch {
                let message = (error as? FetchError)?.message ?? "\(error)"
                events.append(event(WriteEvents.failed, source.name, key, w, [("attempt", String(w.attempts + 1 + attempt)), ("error", message)]))
                return (events, outcome(.failed, nil, message))
            }
            let status = response.status
            let answer = try? JSONValue(parsing: response.body)
            switch status {
            case let s where (200..<300).contains(s) || (s == 404 && w.kind == .delete):
                var meta = [("status", String(status))]
                if let e = response.headers["etag"] { meta.append(("etag", e)) }
                if w.kind == .create, let id = serverId(answer, response, source) { meta.append(("serverId", id)) }
                events.append(event(WriteEvents.acknowledged, source.name, key, w, meta, payload: gate.answer(response.body, url: request.url)))
                return (events, outcome(.acknowledged, status, status == 404 ? "already gone" : "ok"))
            case let s where s == 409 || s == 412 || (s == 422 && guarded):  // 422 only when the patch carried tests
                // The server's version is not the one the write was made on.
                guard let (current, currentETag) = await currentItem(key: key, source: source, headers: headers, options: options) else {
                    let reason = "the server refused the write (\(status)) and the item could not be read again"
                    events.append(
                        event(WriteEvents.failed, source.name, key, w, [("attempt", String(w.attempts + 1)), ("error", reason), ("status", String(status))]))
                    return (events, outcome(.failed, status, reason))
                }
                guard let current else {
                    let reason = "the item is gone on the server"
                    events.append(event(WriteEvents.rejected, source.name, key, w, [("status", "404"), ("reason", reason)]))
                    return (events, outcome(.rejected, 404, reason))
                }
                let paths = w.kind == .delete ? [""] : Array(Set(w.ops.map(\.path))).sorted()
                let changed = paths.filter { current.value(atPointer: $0) != (base ?? .null).value(atPointer: $0) }
                if changed.isEmpty && status != 412 {
                    // The fields hold what the write expects: the patch itself is what the server refuses.
                    var reason = "the server refused the patch (\(status))"
                    if case .string(let e)? = answer?.value(atPath: "error") { reason += ": " + e }
                    events.append(event(WriteEvents.rejected, source.name, key, w, [("status", String(status)), ("reason", reason)]))
                    return (events, outcome(.rejected, status, reason))
                }
                if changed.isEmpty && rebased < options.maxRebases {
                    rebased += 1
                    etag = currentETag
                    base = current
                    events.append(event(WriteEvents.rebased, source.name, key, w, currentETag.map { [("etag", $0)] } ?? []))
                    continue
                }
                var meta = [("status", String(status))]
                if let currentETag { meta.append(("etag", currentETag)) }
                let payload = JSONValue.object(["server": gate.document(current), "paths": .array((changed.isEmpty ? paths : changed).map(JSONValue.string))])
                events.append(event(WriteEvents.conflicted, source.name, key, w, meta, payload: payload.canonicalBytes))
                return (
                    events,
                    outcome(
                        .conflicted, status,
                        "the server changed \((changed.isEmpty ? paths : changed).map { $0.isEmpty ? "the item" : $0 }.joined(separator: ", ")) meanwhile")
                )
            case 429, 500...:
                attempt += 1
                let message = "the server answered \(status)"
                if attempt > options.retries {
                    events.append(
                        event(
                            WriteEvents.failed, source.name, key, w, [("attempt", String(w.attempts + attempt)), ("error", message), ("status", String(status))]
                        ))
                    return (events, outcome(.failed, status, message + "; the write stays pending"))
                }
                let wait = response.headers["retry-after"].flatMap(Double.init).map { min($0, 5) } ?? options.baseBackoff * pow(2, Double(attempt - 1))
                try? await Task.sleep(for: .seconds(wait))
                continue
            default:
                var reason = "the server refused the write (\(status))"
                if case .string(let e)? = answer?.value(atPath: "error") {
                    reason += ": " + e
                } else if !response.body.isEmpty, !gate.redacts {
                    reason += ": " + String(decoding: response.body.prefix(200), as: UTF8.self)
                }
                events.append(
                    event(
                        WriteEvents.rejected, source.name, key, w, [("status", String(status)), ("reason", reason)],
                        payload: gate.answer(response.body, url: request.url)))
                return (events, outcome(.rejected, status, reason))
            }
        }
    }

    private func knownETag(_ source: String, _ key: String) async throws -> String? {
        try await store.read { [store] txn in try PendingReader(transaction: txn, tables: try store.tables(of: "items")).etag(source: source, key: key) }
    }

    /// The request of a write. `guarded` is set when the patch carries `test` operations.
    private func request(
        _ w: OutboxWrite, key: String, source: SourceDefinition, headers: [(name: String, value: String)], etag: String?,
        base: JSONValue?, guarded: inout Bool, options: PushOptions
    ) -> HTTPRequest? {
        guard let url = source.writeURL(w.kind, id: key) else { return nil }
        var h = headers + [("Accept", "application/json"), ("Idempotency-Key", w.id)]
        if let etag, w.kind != .create { h.append(("If-Match", etag)) }
        var body: JSONValue?
        switch w.kind {
        case .create:
            body = w.document
            h.append(("Content-Type", "application/json"))
        case .delete:
            break
        case .patch:
            let from = base ?? .object([:])
            guard let target = try? from.applying(w.ops) else { return nil }
            if source.updateMethod == "PUT" {
                body = target
                h.append(("Content-Type", "application/json"))
            } else if source.patchFormat == "merge-patch" {
                body = from.mergePatch(to: target)
                h.append(("Content-Type", "application/merge-patch+json"))
            } else {
                // Without an ETag (or after a rebase), `test` operations make the server check the
                // touched fields still hold what the write expects.
                var ops: [JSONValue] = []
                guarded = false
                if etag == nil || w.force == false && base != w.base {
                    for p in Set(w.ops.map(\.path)).sorted() {
                        if let v = from.value(atPointer: p) { ops.append(PatchOperation.test(p, v)); guarded = true }
                    }
                }
                ops += w.ops.map(\.wire)
                body = .array(ops)
                h.append(("Content-Type", "application/json-patch+json"))
            }
        }
        return HTTPRequest(url: url, method: method(source, w.kind), body: body?.canonicalBytes, headers: h, timeout: options.timeout, maxBytes: 16 << 20)
    }

    /// The item's document and ETag on the server now: `(nil, nil)` when it is gone; nil when it
    /// could not be read.
    private func currentItem(key: String, source: SourceDefinition, headers: [(name: String, value: String)], options: PushOptions) async -> (
        JSONValue?, String?
    )? {
        guard let url = source.detailURL?.replacingOccurrences(of: "{id}", with: key) ?? source.writeURL(.patch, id: key) ?? source.writeURL(.delete, id: key),
            let r = try? await client.send(HTTPRequest(url: url, headers: headers + [("Accept", "application/json")], timeout: options.timeout))
        else { return nil }
        if r.status == 404 || r.status == 410 { return (nil, nil) }
        guard r.status == 200, let doc = try? JSONValue(parsing: r.body) else { return nil }
        return (doc, r.headers["etag"])
    }

    /// The id the server gave a created item: the source's id field in the answer, else `name`
    /// (Firebase) or `id`, else the last segment of `Location`.
    private func serverId(_ answer: JSONValue?, _ response: HTTPResponse, _ source: SourceDefinition) -> String? {
        func text(_ v: JSONValue?) -> String? {
            switch v {
            case .string(let s)?: s
            case .number(let n)?: n
            default: nil
            }
        }
        if let answer {
            if source.id != ["@key"] {
                let parts = source.id.compactMap { text(answer.value(atPath: $0)) }
                if parts.count == source.id.count { return parts.joined(separator: ":") }
            }
            if let n = text(answer.value(atPath: "name")) ?? text(answer.value(atPath: "id")) { return n }
        }
        if let location = response.headers["location"], let last = location.split(separator: "/").last { return String(last) }
        return nil
    }
}
