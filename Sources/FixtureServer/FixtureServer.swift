import Foundation
import StrataJSON
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A fault a route can be switched to.
public enum Fault: String, Sendable, CaseIterable {
    /// 500 with a JSON error body.
    case serverError
    /// 429 with `Retry-After: 1`.
    case tooManyRequests
    /// A body that is not valid JSON.
    case malformed
    /// Half the body, then the connection is cut.
    case truncated
    /// Valid JSON of the wrong type (a string where a list is expected).
    case wrongType
    /// The normal response after `slowSeconds`.
    case slow
    /// A body of `hugeBytes` bytes.
    case huge
    /// A redirect to itself.
    case redirectLoop
    /// Cursor paging whose next cursor always points back at the first page.
    case cursorLoop
}

/// Serves a directory tree of JSON fixtures over HTTP on 127.0.0.1, as a stand-in for the APIs
/// Strata mirrors: versioned datasets, ETag/304, page-number and id-window paging with `next`
/// links and `Link` headers, relative URLs, images, and a fault switch per route.
///
/// A request for `/D/rest` is answered from `ROOT/D/v<version>/rest` (or `rest.json`), else from
/// `ROOT/D/rest` (version-independent files such as images).
// Unchecked: the version, faults and hooks are in a `Mutex`; `task`, `port` and the settings
// (`slowSeconds`, `wraps`, `hugeBytes`) are set by its owner before and after it serves.
public final class FixtureServer: @unchecked Sendable {
    public let root: String
    /// What requests and tests change while the server runs.
    private struct State {
        var version: Int
        var faults: [(prefix: String, fault: Fault, remaining: Int?)] = []
        var requests: [String: Int] = [:]
        var inFlight = 0
        var peakInFlight = 0
        var cacheControl: String?
        /// Set by ``releaseSlow()``: slow answers go out now.
        var slowReleased = false
        /// Webhook sink: name → the bodies received, once per `Idempotency-Key`.
        var hooks: [String: [(key: String?, body: [UInt8])]] = [:]
    }
    private let state: Mutex<State>
    private var task: Task<Void, any Error>?
    private let writeState = FixtureWrites()
    public private(set) var port = 0
    public var slowSeconds: Double = 3
    /// A dataset asked for past its last version serves its versions again from v1 (the
    /// command-line server, whose `kill -USR1` steps on for ever); tests keep it off.
    public var wraps = false
    public var hugeBytes = 80 << 20

    public init(root: String, version: Int = 1) {
        self.root = root
        state = Mutex(State(version: version))
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The dataset version served (v1, v2, …).
    public var version: Int {
        get { state.withLock { $0.version } }
        set { state.withLock { $0.version = newValue } }
    }

    /// Switches routes under `prefix` to `fault` (for `times` requests, or until cleared).
    public func setFault(_ fault: Fault?, for prefix: String, times: Int? = nil) {
        state.withLock { s in
            s.faults.removeAll { $0.prefix == prefix }
            if let fault { s.faults.append((prefix, fault, times)) }
        }
    }

    /// Lets every slow answer, waiting or to come, go out at once: a test that has seen what
    /// happens while one is in flight need not wait out `slowSeconds`.
    public func releaseSlow() { state.withLock { $0.slowReleased = true } }

    /// A `Cache-Control` header for the dataset files' answers (nil: none), 304s included.
    public var cacheControl: String? {
        get { state.withLock { $0.cacheControl } }
        set { state.withLock { $0.cacheControl = newValue } }
    }

    /// How many requests reached `path` (query excluded).
    public func requests(to path: String) -> Int {
        state.withLock { $0.requests[path, default: 0] }
    }

    /// The most requests handled at once since the start or the last ``resetPeakInFlight()``.
    public var peakInFlight: Int { state.withLock { $0.peakInFlight } }

    public func resetPeakInFlight() {
        state.withLock { $0.peakInFlight = $0.inFlight }
    }

    /// Answers `request`, counted as in flight until its response is built.
    private func handle(_ request: Request) async throws -> Response {
        state.withLock { s in
            s.inFlight += 1
            s.peakInFlight = max(s.peakInFlight, s.inFlight)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        return try await respond(request)
    }

    /// Runs `body` on the write state under the server's lock.
    func withWrites<T>(_ body: (FixtureWrites) -> T) -> T {
        let writes = writeState
        return state.withLock { _ in body(writes) }
    }

    private func takeFault(for path: String) -> Fault? {
        state.withLock { s in
            s.requests[path, default: 0] += 1
            let faults = s.faults
            guard let i = faults.indices.filter({ path.hasPrefix(faults[$0].prefix) }).max(by: { faults[$0].prefix.count < faults[$1].prefix.count }) else {
                return nil
            }
            let f = faults[i]
            if let r = f.remaining {
                if r <= 1 { s.faults.remove(at: i) } else { s.faults[i].remaining = r - 1 }
            }
            return f.fault
        }
    }

    /// Starts listening on 127.0.0.1 (`port` 0 picks a free one) and returns the port.
    @discardableResult
    public func start(port requested: Int = 0) async throws -> Int {
        let router = Router()
        router.get("**") { request, _ in try await self.handle(request) }
        router.head("**") { request, _ in try await self.handle(request) }
        router.post("**") { request, _ in try await self.handle(request) }
        router.patch("**") { request, _ in try await self.handle(request) }
        router.put("**") { request, _ in try await self.handle(request) }
        router.delete("**") { request, _ in try await self.handle(request) }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "fixture-server")
        logger.logLevel = .critical  // stopping by cancellation logs errors that are not
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: requested)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger
        )
        // The stream also ends when the server stops, so a port that is taken throws here.
        let running = Task {
            defer { continuation.finish() }
            try await app.runService(gracefulShutdownSignals: [])
        }
        task = running
        var listening: Int?
        for await p in stream { listening = p }
        guard let listening else {
            try await running.value
            throw FixtureServerError.notListening(port: requested)
        }
        port = listening
        return port
    }

    /// Stops the server.
    public func stop() async {
        task?.cancel()
        _ = try? await task?.value
        task = nil
    }

    // MARK: Responses

    /// The bearer token the `github` dataset requires (`Authorization: Bearer fixture-token`).
    public static let githubToken = "fixture-token"

    private func respond(_ request: Request) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/_hooks/") { return try await hook(request, name: String(path.dropFirst("/_hooks/".count))) }
        let fault = takeFault(for: path)
        if path.hasPrefix("/github/"), request.headers[.authorization] != "Bearer \(Self.githubToken)" {
            // As GitHub answers a private repository without a token.
            var r = json(#"{"message":"Requires authentication","documentation_url":"https://docs.github.com/rest"}"#, status: .unauthorized)
            r.headers[HTTPField.Name("WWW-Authenticate")!] = #"Bearer realm="fixture""#
            return r
        }
        switch fault {
        case .serverError?:
            return json(#"{"error":"internal error"}"#, status: .internalServerError)
        case .tooManyRequests?:
            var r = json(#"{"error":"slow down"}"#, status: .tooManyRequests)
            r.headers[.retryAfter] = "1"
            return r
        case .redirectLoop?:
            return Response(status: .found, headers: [.location: request.uri.description])
        case .huge?:
            let total = hugeBytes
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody { writer in
                    let chunk = ByteBuffer(bytes: [UInt8](repeating: UInt8(ascii: " "), count: 1 << 16))
                    var sent = 0
                    try await writer.write(ByteBuffer(string: "["))
                    while sent < total { try await writer.write(chunk); sent += chunk.readableBytes }
                    try await writer.write(ByteBuffer(string: "]"))
                    try await writer.finish(nil)
                })
        case .slow?:
            let deadline = ContinuousClock.now + .seconds(slowSeconds)
            while ContinuousClock.now < deadline, !state.withLock({ $0.slowReleased }) { try await Task.sleep(for: .milliseconds(20)) }
        default:
            break
        }
        if request.method != .get && request.method != .head {
            switch fault {
            case .malformed?: return json("{,]", status: .ok)
            case .truncated?: throw CancellationError()
            default: return try await respondToWrite(request)
            }
        }
        if path.hasPrefix("/synthetic/") {
            let latency = Self.syntheticLatency(request.uri.queryParameters)
            guard let (body, headers) = synthetic(path, request.uri.queryParameters, latency: latency) else {
                return json(#"{"error":"not found"}"#, status: .notFound)
            }
            if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
            let etag = "\"\(fnv1a(body))\""
            if request.headers[.ifNoneMatch] == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
            var h = headers
            h[.eTag] = etag
            return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
        guard case (var body, let contentType)? = load(path) else {
            return itemResponse(path, request: request) ?? json(#"{"error":"not found"}"#, status: .notFound)
        }
        var headers: HTTPFields = [.contentType: contentType]
        if contentType == "application/json" {
            body = withWritesApplied(path, body)
            (body, headers) = page(body, request: request, headers: headers, cursorLoop: fault == .cursorLoop)
        }
        switch fault {
        case .malformed?:
            body = Array(body.prefix(max(1, body.count / 2))) + Array("{,]".utf8)
        case .wrongType?:
            body = Array(#""this is a string, not the expected list""#.utf8)
        case .truncated?:
            let part = ByteBuffer(bytes: body.prefix(max(1, body.count / 2)))
            return Response(
                status: .ok, headers: [.contentType: contentType],
                body: ResponseBody(contentLength: body.count) { writer in
                    try await writer.write(part)
                    throw CancellationError()  // the connection is closed mid-body
                })
        default:
            break
        }
        let etag = "\"\(fnv1a(body))\""
        headers[.eTag] = etag
        let cacheControl = state.withLock { $0.cacheControl }
        if let cacheControl { headers[.cacheControl] = cacheControl }
        if let inm = request.headers[.ifNoneMatch], inm == etag {
            var h: HTTPFields = [.eTag: etag]
            if let cacheControl { h[.cacheControl] = cacheControl }
            return Response(status: .notModified, headers: h)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A generated dataset for benchmarks: `/synthetic/items?n=N&bytes=B` lists N items, each with
    /// a relative detail URL, paged with `&page=P&size=S` (`next` and a Link header, as the other
    /// datasets; generated page by page, so serving it costs the server next to nothing);
    /// `/synthetic/items/I?bytes=B` is a nested detail of about B bytes.
    /// Both depend on the served version, so a version bump changes every detail. `latencyMs=L`
    /// (at most 10,000) answers each request L ms late, as a remote API would, without using the
    /// CPU meanwhile; the list passes it on to its detail URLs and next pages.
    private func synthetic(_ path: String, _ query: Parameters, latency: Int) -> ([UInt8], HTTPFields)? {
        let parts = path.split(separator: "/")
        let bytes = query["bytes"].flatMap { Int(String($0)) }.map { min(max($0, 64), 16 << 20) } ?? 1024
        // The query every generated URL carries on: the body size, and the latency if any.
        let carried = Self.syntheticQuery(bytes: bytes, latencyMs: latency)
        let v = version
        var headers: HTTPFields = [.contentType: "application/json"]
        if parts.count == 2, parts[1] == "items" {
            let n = query["n"].flatMap { Int(String($0)) }.map { min(max($0, 0), 1_000_000) } ?? 100
            var range = 0..<n
            var next = "null"
            if let page = query["page"].flatMap({ Int(String($0)) }), let size = query["size"].flatMap({ Int(String($0)) }), size > 0 {
                let start = min(n, max(0, (page - 1) * size))
                range = start..<min(n, start + size)
                if start + size < n {
                    let link = "/synthetic/items?n=\(n)&\(carried)&page=\(page + 1)&size=\(size)"
                    next = "\"\(link)\""
                    headers[HTTPField.Name("Link")!] = "<\(link)>; rel=\"next\""
                }
            }
            var out = #"{"count":\#(n),"next":\#(next),"results":["#
            for i in range {
                if i > range.lowerBound { out += "," }
                out += #"{"id":\#(i),"title":"item \#(i)","url":"/synthetic/items/\#(i)?\#(carried)"}"#
            }
            return (Array((out + "]}").utf8), headers)
        }
        guard parts.count == 3, parts[1] == "items", let i = Int(parts[2]) else { return nil }
        return (Self.syntheticDetail(id: i, version: v, bytes: bytes), headers)
    }

    /// The synthetic dataset's detail document of item `id` at `version`: nested JSON (specs,
    /// an owner, a list of parts) of about `bytes` bytes. Deterministic.
    public static func syntheticDetail(id i: Int, version v: Int, bytes: Int) -> [UInt8] {
        var out = #"{"id":\#(i),"version":\#(v),"title":"item \#(i)","price":\#((i * 7919 + v * 13) % 100_000),"tags":["a\#(i % 7)","b\#(i % 11)"],"#
        out += #""specs":{"km":\#(i * 31 % 200_000),"year":\#(2000 + i % 25),"owner":{"name":"owner \#(i % 97)","city":"city \#(i % 13)"}},"parts":["#
        var k = 0
        while out.utf8.count < bytes - 40 {
            if k > 0 { out += "," }
            out += #"{"n":\#(k),"code":"p\#((i &* 31 &+ k &* 17) % 9973)","qty":\#((k * 3 + v) % 10)}"#
            k += 1
        }
        return Array((out + "]}").utf8)
    }

    /// The query of a synthetic URL: details of about `bytes` bytes, each request answered
    /// `latencyMs` late (none at 0).
    public static func syntheticQuery(bytes: Int, latencyMs: Int = 0) -> String {
        "bytes=\(bytes)" + (latencyMs > 0 ? "&latencyMs=\(latencyMs)" : "")
    }

    /// The `latencyMs` of a synthetic request: 0 (none) to 10,000 ms.
    static func syntheticLatency(_ query: Parameters) -> Int {
        query["latencyMs"].flatMap { Int(String($0)) }.map { min(max($0, 0), 10_000) } ?? 0
    }

    /// A webhook receiver for demos and the tour: `POST /_hooks/NAME` keeps a JSON body (once per
    /// `Idempotency-Key`: a key seen before is answered 200 and not kept again); `GET
    /// /_hooks/NAME` answers what it kept, oldest first, as a JSON array.
    private func hook(_ request: Request, name: String) async throws -> Response {
        switch request.method {
        case .post:
            let body = [UInt8](buffer: try await request.body.collect(upTo: 1 << 20))
            guard (try? JSONValue(parsing: body)) != nil else { return json(#"{"error":"the body is not JSON"}"#, status: .badRequest) }
            let key = request.headers[HTTPField.Name("Idempotency-Key")!]
            let count = state.withLock { s -> Int in
                if key == nil || !(s.hooks[name] ?? []).contains(where: { $0.key == key }) { s.hooks[name, default: []].append((key, body)) }
                return s.hooks[name]?.count ?? 0
            }
            return json(#"{"received":\#(count)}"#, status: .ok)
        case .get:
            let bodies = state.withLock { $0.hooks[name] ?? [] }.map { String(decoding: $0.body, as: UTF8.self) }
            return json("[" + bodies.joined(separator: ",\n") + "]\n", status: .ok)
        default:
            return json(#"{"error":"POST or GET"}"#, status: .methodNotAllowed)
        }
    }

    private func json(_ text: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// `version` within the dataset's own versions (v1…vN): past its last one, round again from v1.
    private func wrapped(_ version: Int, dataset: String) -> Int {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "\(root)/\(dataset)")) ?? []).compactMap {
            $0.hasPrefix("v") ? Int($0.dropFirst()) : nil
        }
        guard let last = versions.max(), last > 0, version > last else { return version }
        return (version - 1) % last + 1
    }

    func load(_ path: String) -> ([UInt8], String)? {
        let parts = path.split(separator: "/").map(String.init)
        guard let dataset = parts.first, !parts.contains(".."), !parts.contains(where: { $0.hasPrefix(".") }) else { return nil }
        let rest = parts.dropFirst().joined(separator: "/")
        let version = wraps ? wrapped(version, dataset: dataset) : version
        let candidates = [
            "\(root)/\(dataset)/v\(version)/\(rest)", "\(root)/\(dataset)/v\(version)/\(rest).json",
            "\(root)/\(dataset)/\(rest)", "\(root)/\(dataset)/\(rest).json"
        ]
        for c in candidates {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: c, isDirectory: &isDir), !isDir.boolValue, let d = FileManager.default.contents(atPath: c) {
                let type = c.hasSuffix(".png") ? "image/png" : c.hasSuffix(".jpg") ? "image/jpeg" : "application/json"
                return ([UInt8](d), type)
            }
        }
        return nil
    }

    /// Pages a list: `?page=N&size=M` (1-based) or `?since_id=A|max_id=B&count=M` over the array at
    /// the root or under `results`. Adds a relative `next` URL to object bodies and a `Link` header.
    private func page(_ body: [UInt8], request: Request, headers: HTTPFields, cursorLoop: Bool) -> ([UInt8], HTTPFields) {
        let q = request.uri.queryParameters
        // GitHub-style `per_page` without `page` is the first page.
        let pageNumber = q["page"].flatMap { Int(String($0)) } ?? (q["per_page"] != nil ? 1 : nil)
        let sizeName = q["size"] != nil ? "size" : "per_page"
        let size = (q["size"] ?? q["per_page"]).flatMap { Int(String($0)) }
        let count = q["count"].flatMap { Int(String($0)) }
        let sinceId = q["since_id"].flatMap { Int(String($0)) }
        let maxId = q["max_id"].flatMap { Int(String($0)) }
        if let limit = q["limit"].flatMap({ Int(String($0)) }), limit > 0 {
            return limitPage(body, query: q, limit: limit, loop: cursorLoop, headers: headers)
        }
        guard (pageNumber != nil && size != nil) || count != nil,
            let any = try? JSONSerialization.jsonObject(with: Data(body))
        else { return (body, headers) }
        var object = any as? [String: Any]
        guard var items = (object?["results"] ?? any) as? [Any] else { return (body, headers) }
        var headers = headers
        var nextQuery: String?
        let path = request.uri.path
        if let pageNumber, let size, size > 0 {
            let start = max(0, (pageNumber - 1) * size)
            let slice = start < items.count ? Array(items[start..<min(items.count, start + size)]) : []
            if start + size < items.count { nextQuery = "page=\(pageNumber + 1)&\(sizeName)=\(size)" }
            items = slice
        } else if let count {
            func id(_ v: Any) -> Int { ((v as? [String: Any])?["id"] as? Int) ?? 0 }
            var window = items.filter { (sinceId == nil || id($0) > sinceId!) && (maxId == nil || id($0) <= maxId!) }
            window.sort { id($0) > id($1) }
            let taken = Array(window.prefix(count))
            if window.count > count, let last = taken.last { nextQuery = "max_id=\(id(last) - 1)&count=\(count)" + (sinceId.map { "&since_id=\($0)" } ?? "") }
            items = taken
        }
        if object != nil {
            object!["results"] = items
            object!["next"] = nextQuery.map { "\(path)?\($0)" } ?? NSNull()
        }
        if let nextQuery { headers[HTTPField.Name("Link")!] = "<\(path)?\(nextQuery)>; rel=\"next\"" }
        let out = (try? JSONSerialization.data(withJSONObject: object ?? items, options: [.sortedKeys])) ?? Data(body)
        return ([UInt8](out), headers)
    }
}

extension FixtureServer {
    /// Pages with `limit=N` in the three styles real APIs use, all in one body: a cursor
    /// (`cursor=c<start>`, next in `meta.next_cursor`, null at the end), an offset (`offset=K`,
    /// the count in `total`), and starting after an id (`starting_after=ID`, `has_more`). The
    /// array is at the root or under `results`; the body is an object with `results`.
    fileprivate func limitPage(_ body: [UInt8], query q: Parameters, limit: Int, loop: Bool, headers: HTTPFields) -> ([UInt8], HTTPFields) {
        guard let any = try? JSONSerialization.jsonObject(with: Data(body)) else { return (body, headers) }
        let object = any as? [String: Any]
        guard let items = (object?["results"] ?? any) as? [Any] else { return (body, headers) }
        func id(_ v: Any) -> String {
            guard let raw = (v as? [String: Any])?["id"] else { return "" }
            return "\(raw)"
        }
        var start = 0
        if let cursor = q["cursor"].map(String.init), cursor.hasPrefix("c"), let n = Int(cursor.dropFirst()) { start = n }
        if let offset = q["offset"].flatMap({ Int(String($0)) }) { start = offset }
        if let after = q["starting_after"].map(String.init) {
            start = (items.firstIndex { id($0) == after }).map { $0 + 1 } ?? items.count
        }
        start = min(max(0, start), items.count)
        let end = min(items.count, start + limit)
        let more = end < items.count
        let next: Any = loop ? "c0" : (more ? "c\(end)" : NSNull())
        let meta: [String: Any] = ["next_cursor": next]
        var out: [String: Any] = ["total": items.count, "has_more": more, "meta": meta]
        out["results"] = Array(items[start..<end])
        let data = (try? JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])) ?? Data(body)
        return ([UInt8](data), headers)
    }
}

/// FNV-1a 64 of the bytes, hex: a stable ETag.
func fnv1a(_ bytes: [UInt8]) -> String {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return String(h, radix: 16)
}

/// Why the fixture server could not start.
public enum FixtureServerError: Error, CustomStringConvertible {
    case notListening(port: Int)
    public var description: String {
        switch self {
        case .notListening(let port): "the fixture server stopped before it listened on 127.0.0.1:\(port)"
        }
    }
}
