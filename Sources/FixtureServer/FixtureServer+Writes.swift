import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
public import StrataJSON

/// The fixture API's write side, for any dataset whose list is a map of objects keyed by id
/// (Firebase style, `notes`) or an array of objects with an `id` (at the root, `catalog`, or
/// under `results`, `cars`):
///
/// - `POST /D/list` creates (map: a push id, answered `{"name": id}` as Firebase does; array:
///   the next number, answered 201 with the document and a `Location`);
/// - `GET /D/list/ID` reads one item with its `ETag`;
/// - `PATCH /D/list/ID` applies an RFC 6902 patch (`application/json-patch+json`) or an RFC 7396
///   merge patch (`application/merge-patch+json`); `PUT` replaces the item; `DELETE` removes it.
///   `If-Match` with a stale ETag is 412; an invalid patch or a failed `test` is 422.
/// - `Idempotency-Key`: a key seen before gets the first answer again and changes nothing.
///
/// Writes change what the server serves: later list and item reads include them, whatever the
/// dataset version. The route fault switches apply to writes as to reads.
// Unchecked: it is only reached under the server's state lock (`FixtureServer.withWrites(_:)`).
final class FixtureWrites: @unchecked Sendable {
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: [UInt8]
    }

    /// Per list path: documents written (created or changed) and keys deleted.
    private var written: [String: [String: JSONValue]] = [:]
    private var createdOrder: [String: [String]] = [:]
    private var deleted: [String: Set<String>] = [:]
    private var nextId = 0
    /// Idempotency key → the request it was first used for, and the answer given.
    private var idempotent: [String: (fingerprint: String, answer: Answer)] = [:]
    /// Idempotency key → how many times a write under it changed the data (1 at most, unless a
    /// client misbehaves; the crash tests count them).
    private(set) var applied: [String: Int] = [:]
    /// Requests answered from an idempotency key seen before (a client sending a write again).
    private(set) var replays = 0

    func hasWrites(_ list: String) -> Bool { written[list] != nil || deleted[list] != nil }

    /// The shape of a list body and its items by key.
    enum Shape { case map, array, results }

    static func items(of base: JSONValue) -> (Shape, [(key: String, doc: JSONValue)])? {
        switch base {
        case .object(let o) where o["results"] != nil:
            guard case .array(let a)? = o["results"] else { return nil }
            return (.results, a.compactMap { d in key(of: d).map { ($0, d) } })
        case .object(let o):
            guard o.values.allSatisfy({ if case .object = $0 { true } else { false } }) else { return nil }
            return (.map, JSONValue.sortedMembers(o).map { ($0.key, $0.value) })
        case .array(let a):
            return (.array, a.compactMap { d in key(of: d).map { ($0, d) } })
        default:
            return nil
        }
    }

    static func key(of doc: JSONValue) -> String? {
        switch doc.value(atPath: "id") {
        case .number(let n)?: n
        case .string(let s)?: s
        default: nil
        }
    }

    /// The list as served now: the base with this server's writes applied.
    func materialize(_ list: String, base: JSONValue) -> JSONValue {
        guard hasWrites(list), let (shape, entries) = Self.items(of: base) else { return base }
        let current = current(list, entries)
        switch shape {
        case .map: return .object(Dictionary(current.map { ($0.key, $0.doc) }, uniquingKeysWith: { a, _ in a }))
        case .array: return .array(current.map(\.doc))
        case .results:
            guard case .object(var o) = base else { return base }
            o["results"] = .array(current.map(\.doc))
            if o["count"] != nil { o["count"] = .number(String(current.count)) }
            return .object(o)
        }
    }

    private func current(_ list: String, _ entries: [(key: String, doc: JSONValue)]) -> [(key: String, doc: JSONValue)] {
        let gone = deleted[list] ?? [], changed = written[list] ?? [:]
        var out = entries.filter { !gone.contains($0.key) }.map { ($0.key, changed[$0.key] ?? $0.doc) }
        let base = Set(entries.map(\.key))
        for k in createdOrder[list] ?? [] where !base.contains(k) && !gone.contains(k) { out.append((k, changed[k]!)) }
        return out
    }

    /// One item of the list now, or nil.
    func item(_ list: String, key: String, base: JSONValue) -> JSONValue? {
        guard let (_, entries) = Self.items(of: base) else { return nil }
        return current(list, entries).first { $0.key == key }?.doc
    }

    static func etag(_ doc: JSONValue) -> String { "\"\(fnv1a(doc.canonicalBytes))\"" }

    /// Answers a write to `path` whose list (`list`, parsed as `base`) is known.
    func write(method: HTTPRequest.Method, list: String, key: String?, base: JSONValue, headers: HTTPFields, body: [UInt8]) -> Answer {
        let fingerprint = "\(method.rawValue) \(list)/\(key ?? "")"
        let idemKey = headers[HTTPField.Name("Idempotency-Key")!]
        if let idemKey, let seen = idempotent[idemKey] {
            guard seen.fingerprint == fingerprint else {
                return Self.error(.unprocessableContent, "Idempotency-Key \(idemKey) was used for another request (\(seen.fingerprint))")
            }
            replays += 1
            return seen.answer
        }
        let answer = apply(method: method, list: list, key: key, base: base, headers: headers, body: body)
        // Only a write that changed the data is remembered: a refused one (412, 422) may be
        // sent again, rebased, under the same key.
        if let idemKey, (200..<300).contains(Int(answer.status.code)) {
            idempotent[idemKey] = (fingerprint, answer)
            applied[idemKey, default: 0] += 1
        }
        return answer
    }

    private func apply(method: HTTPRequest.Method, list: String, key: String?, base: JSONValue, headers: HTTPFields, body: [UInt8]) -> Answer {
        guard let (shape, _) = Self.items(of: base) else { return Self.error(.methodNotAllowed, "\(list) is not a writable list") }
        if method == .post {
            guard key == nil else { return Self.error(.methodNotAllowed, "POST to the list, not to an item") }
            guard case .object(var doc)? = try? JSONValue(parsing: body) else { return Self.error(.unprocessableContent, "the body must be a JSON object") }
            nextId += 1
            let newKey: String
            if shape == .map {
                newKey = "-S" + String(repeating: "0", count: max(0, 12 - String(nextId).count)) + String(nextId) + "wrt"
            } else {
                let ids = (Self.items(of: materialize(list, base: base))?.1 ?? []).compactMap { Int($0.key) }
                newKey = String((ids.max() ?? 0) + 1)
                doc["id"] = .number(newKey)
            }
            written[list, default: [:]][newKey] = .object(doc)
            createdOrder[list, default: []].append(newKey)
            deleted[list]?.remove(newKey)
            let etag = Self.etag(.object(doc))
            if shape == .map {
                return Answer(
                    status: .ok, headers: [.contentType: "application/json", .eTag: etag], body: JSONValue.object(["name": .string(newKey)]).canonicalBytes)
            }
            return Answer(
                status: .created, headers: [.contentType: "application/json", .eTag: etag, .location: "\(list)/\(newKey)"],
                body: JSONValue.object(doc).canonicalBytes)
        }
        guard let key else { return Self.error(.methodNotAllowed, "\(method.rawValue) needs an item: \(list)/ID") }
        guard let current = item(list, key: key, base: base) else { return Self.error(.notFound, "no item \(key) in \(list)") }
        let etag = Self.etag(current)
        if let ifMatch = headers[.ifMatch], ifMatch != "*", ifMatch != etag {
            var a = Self.error(.preconditionFailed, "the item changed: If-Match \(ifMatch) is not its ETag \(etag)")
            a.headers[.eTag] = etag
            return a
        }
        var next: JSONValue
        switch method {
        case .delete:
            deleted[list, default: []].insert(key)
            written[list, default: [:]].removeValue(forKey: key)
            return Answer(status: .noContent, headers: [:], body: [])
        case .put:
            guard let doc = try? JSONValue(parsing: body), case .object = doc else {
                return Self.error(.unprocessableContent, "the body must be a JSON object")
            }
            next = doc
        case .patch:
            guard let patch = try? JSONValue(parsing: body) else { return Self.error(.unprocessableContent, "the body is not JSON") }
            let type = headers[.contentType] ?? ""
            if type.hasPrefix("application/json-patch+json") || (type.hasPrefix("application/json") && { if case .array = patch { true } else { false } }()) {
                do { next = try current.applying(patchDocument: patch) } catch {
                    return Self.error(.unprocessableContent, error.description)
                }
            } else {
                next = current.mergePatched(with: patch)
            }
        default:
            return Self.error(.methodNotAllowed, "\(method.rawValue) is not supported")
        }
        guard case .object(var o) = next else { return Self.error(.unprocessableContent, "an item must stay a JSON object") }
        if shape != .map, o["id"] != current.value(atPath: "id") { o["id"] = current.value(atPath: "id") }  // ids are the server's
        next = .object(o)
        written[list, default: [:]][key] = next
        return Answer(status: .ok, headers: [.contentType: "application/json", .eTag: Self.etag(next)], body: next.canonicalBytes)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Answer {
        Answer(status: status, headers: [.contentType: "application/json"], body: JSONValue.object(["error": .string(message)]).canonicalBytes)
    }
}

extension FixtureServer {
    /// Answers a POST, PATCH, PUT or DELETE (after the route's fault, if any).
    func respondToWrite(_ request: Request) async throws -> Response {
        let path = request.uri.path
        let body = [UInt8](buffer: try await request.body.collect(upTo: 16 << 20))
        let parts = path.split(separator: "/").map(String.init)
        // The list is the path itself (POST) or its parent (an item).
        var list = path, key: String?
        var base = loadList(path)
        if request.method != .post || base == nil, parts.count >= 2, let parent = loadList("/" + parts.dropLast().joined(separator: "/")) {
            list = "/" + parts.dropLast().joined(separator: "/")
            key = parts.last?.removingPercentEncoding
            base = parent
        }
        guard let base else { return answer(FixtureWrites.error(.notFound, "no list at \(path)")) }
        return answer(withWrites { $0.write(method: request.method, list: list, key: key, base: base, headers: request.headers, body: body) })
    }

    /// The list at `path` as served now (with writes), parsed; nil when there is none.
    func loadList(_ path: String) -> JSONValue? {
        guard case (let bytes, "application/json")? = load(path), let base = try? JSONValue(parsing: bytes),
            FixtureWrites.items(of: base) != nil
        else { return nil }
        return base
    }

    /// `path` as an item of a list that has writes or can take them: its document and ETag.
    func itemResponse(_ path: String, request: Request) -> Response? {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count >= 2, let key = parts.last?.removingPercentEncoding else { return nil }
        let list = "/" + parts.dropLast().joined(separator: "/")
        guard let base = loadList(list), let doc = withWrites({ $0.item(list, key: key, base: base) }) else { return nil }
        let etag = FixtureWrites.etag(doc)
        if request.headers[.ifNoneMatch] == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
        return Response(
            status: .ok, headers: [.contentType: "application/json", .eTag: etag], body: ResponseBody(byteBuffer: ByteBuffer(bytes: doc.canonicalBytes)))
    }

    /// A list body with the server's writes applied (the body unchanged when it has none).
    func withWritesApplied(_ path: String, _ body: [UInt8]) -> [UInt8] {
        guard withWrites({ $0.hasWrites(path) }), let base = try? JSONValue(parsing: body) else { return body }
        return withWrites { $0.materialize(path, base: base) }.canonicalBytes
    }

    private func answer(_ a: FixtureWrites.Answer) -> Response {
        Response(status: a.status, headers: a.headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: a.body)))
    }

    /// How many times writes under this idempotency key changed the data.
    public func applied(idempotencyKey: String) -> Int { withWrites { $0.applied[idempotencyKey] ?? 0 } }

    /// Every idempotency key that changed the data, with how many times.
    public var appliedWrites: [String: Int] { withWrites { $0.applied } }

    /// Writes answered again from their idempotency key instead of being applied twice.
    public var replayedWrites: Int { withWrites { $0.replays } }

    /// Changes an item as another client would (a merge patch, no precondition): for tests of
    /// conflicting writes. Returns false when there is no such item.
    @discardableResult
    public func changeItem(list: String, key: String, mergePatch: JSONValue) -> Bool {
        guard let base = loadList(list) else { return false }
        var headers = HTTPFields()
        headers[.contentType] = "application/merge-patch+json"
        let a = withWrites { $0.write(method: .patch, list: list, key: key, base: base, headers: headers, body: mergePatch.canonicalBytes) }
        return a.status == .ok
    }

    /// A list as served now (the dataset's version with the writes applied), or nil.
    public func list(_ path: String) -> JSONValue? {
        guard let base = loadList(path) else { return nil }
        return withWrites { $0.materialize(path, base: base) }
    }

    /// The current document of a list's item, or nil.
    public func item(list: String, key: String) -> JSONValue? {
        guard let base = loadList(list) else { return nil }
        return withWrites { $0.item(list, key: key, base: base) }
    }
}
