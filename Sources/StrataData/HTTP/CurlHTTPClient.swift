import CCurl
import Foundation
import Synchronization

/// An ``HTTPClient`` on libcurl's multi interface.
///
/// libcurl is loaded on the first request (see CCurl.h: linked, it and the libraries it needs
/// would be loaded by every command, reads included), and the loop thread starts then too. A machine without
/// libcurl gets a clear error on its first request, and nothing else changes.
public final class CurlHTTPClient: HTTPClient, Sendable {
    public struct Configuration: Sendable {
        public var userAgent: String
        public var connectTimeout: Double = 10
        public var maxRedirects = 5
        /// Turns TLS verification off. Only for a test server with a self-signed certificate.
        public var insecureSkipTLSVerify = false
        /// Load libcurl at once, on a thread of its own, for a run that is about to make
        /// requests: that work (about 7 ms) then overlaps what the run reads from the store
        /// before its first request, instead of delaying that request. The process must not exit
        /// during the load: the entry waits for it (`strata_library_settle_all`).
        public var startAtOnce = false
        public init(userAgent: String = "Strata/0.1") { self.userAgent = userAgent }
    }

    private let configuration: Configuration
    private let started = Mutex<CurlEngine?>(nil)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        // Only the library: a failure is reported by the first request, which starts the engine.
        if configuration.startAtOnce { Thread { _ = ccurl_load() }.start() }
    }

    /// The engine, started on first use; throws when libcurl cannot be loaded.
    private func engine(for url: String) throws(FetchError) -> CurlEngine {
        let configuration = self.configuration
        return try started.withLock { (started) throws(FetchError) -> CurlEngine in
            if let started { return started }
            if let problem = ccurl_load() {
                throw FetchError(
                    code: .other, message: "libcurl could not be loaded (\(String(cString: problem))); install it: apt-get install libcurl4", url: url)
            }
            let e = CurlEngine(configuration: configuration)
            started = e
            return e
        }
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await engine(for: request.url).send(request)
    }

    public func transfers(_ requests: [HTTPRequest], concurrency: Int) -> HTTPTransfers {
        do {
            return try engine(for: requests.first?.url ?? "").transfers(requests, concurrency: concurrency)
        } catch {
            return FailingProducer.batch(requests, concurrency: concurrency, error: error)
        }
    }
}

/// Drives a batch the way the engine does, failing every request it may start with one error:
/// the batch of a client that could not load libcurl. Each wake-up (a free slot, a consumed
/// backlog, a retry) fails what may start next, so the consumer sees every request end.
// Unchecked: `batch` is set once, right after init and before the batch can wake it; failing
// requests goes through the batch's own synchronization.
private final class FailingProducer: @unchecked Sendable {
    private weak var batch: HTTPTransfers?
    private let error: FetchError

    private init(error: FetchError) { self.error = error }

    static func batch(_ requests: [HTTPRequest], concurrency: Int, error: FetchError) -> HTTPTransfers {
        let producer = FailingProducer(error: error)
        let batch = HTTPTransfers(requests: requests, concurrency: concurrency) { producer.failStartable() }
        producer.batch = batch
        producer.failStartable()
        return batch
    }

    private func failStartable() {
        while let batch, case let indices = batch.startable(), !indices.isEmpty {
            batch.complete(indices.map { HTTPCompletion(index: $0, result: .failure(error)) })
        }
    }
}

/// The loop behind ``CurlHTTPClient``, one dedicated thread.
///
/// `send` hands the request to the loop thread and suspends; the thread adds an easy handle to
/// the multi handle, drives every transfer with `curl_multi_perform` + `curl_multi_poll`, and
/// resumes each caller when its transfer completes. A batch (`transfers`) is driven by the loop
/// thread itself: the moment one of its transfers finishes the next one starts, in the same
/// pass, and the pass's completions reach the consumer together. Easy handles are reused (the
/// options common to every request are set once per handle), so connections, TLS sessions and
/// DNS results are reused; HTTP/2 multiplexing is used where the server offers it. No blocking
/// call ever runs on Swift's cooperative pool (whose threads, on Linux, are libdispatch's:
/// blocking them would starve every task in the process).
///
/// Options: redirects followed (at most 5) only to http/https; automatic decompression of every
/// encoding libcurl supports; TLS peer and host verification on unless `insecureSkipTLSVerify`;
/// connect and total timeouts; a body limit enforced while receiving; `NOSIGNAL`.
// Unchecked: the libcurl multi handle is driven by its one loop thread; callers reach it only
// through the shared state under its lock.
final class CurlEngine: @unchecked Sendable {
    typealias Configuration = CurlHTTPClient.Configuration

    /// One request in flight: made by a caller, handed to the loop thread through the shared
    /// state, and owned by that thread from then on.
    // Unchecked: a raw easy handle, owned by the caller until handed to the loop thread, then
    // by that thread alone.
    final class Transfer: @unchecked Sendable {
        /// Who learns the outcome: a suspended `send`, or a batch's request number.
        enum Delivery {
            case caller(CheckedContinuation<HTTPResponse, any Error>)
            case batch(HTTPTransfers, Int)
        }
        let request: HTTPRequest
        let sink: BodySink
        let delivery: Delivery
        var handle: UnsafeMutableRawPointer?
        var headers: UnsafeMutablePointer<curl_slist>?
        var started = ContinuousClock.now

        init(request: HTTPRequest, delivery: Delivery) {
            self.request = request
            self.sink = BodySink(limit: request.maxBytes)
            self.delivery = delivery
        }
    }

    private let configuration: Configuration
    private let multi: UnsafeMutableRawPointer
    /// What callers hand the loop thread, and whether it runs.
    private struct Shared {
        var pending: [Transfer] = []
        var pendingBatches: [HTTPTransfers] = []
        var stopping = false
        var running = false
    }
    private let shared = Mutex(Shared())
    // Owned by the loop thread only:
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idle: [UnsafeMutableRawPointer] = []
    private var batches: [HTTPTransfers] = []

    /// Only after `ccurl_load()` returned nil.
    init(configuration: Configuration) {
        self.configuration = configuration
        multi = ccurl_multi_init()!
        waker = Waker(multi)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 16)
        // Not `unowned`: a client released before its thread first runs is already deinitializing
        // when the thread reads `self`, and a checked unowned read of it traps. `deinit` waits
        // for the loop to exit, so the object's memory outlives every access the thread makes.
        let t = Thread { [unowned(unsafe) self] in self.loop() }
        t.name = "strata.curl"
        shared.withLock { $0.running = true }
        t.start()
    }

    deinit {
        // The loop thread holds no strong reference; it exits on `stopping`.
        shared.withLock { $0.stopping = true }
        ccurl_multi_wakeup(multi)
        while shared.withLock({ $0.running }) { usleep(1_000) }
        waker.disconnect()
        ccurl_multi_cleanup(multi)
        for h in idle { ccurl_easy_cleanup(h) }
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<HTTPResponse, any Error>) in
            let transfer = Transfer(request: request, delivery: .caller(c))
            shared.withLock { $0.pending.append(transfer) }
            ccurl_multi_wakeup(multi)
        }
    }

    func transfers(_ requests: [HTTPRequest], concurrency: Int) -> HTTPTransfers {
        let waker = self.waker
        let batch = HTTPTransfers(requests: requests, concurrency: concurrency) { waker.wake() }
        shared.withLock { $0.pendingBatches.append(batch) }
        waker.wake()
        return batch
    }

    /// Wakes the loop thread for a batch. A batch (and a back-off task resubmitting to it) can
    /// outlive the client, so the multi handle is reached through this, which the client's
    /// `deinit` disconnects before the handle is freed.
    private final class Waker: Sendable {
        /// The multi handle; libcurl's wakeup may be called from any thread.
        private struct Handle: @unchecked Sendable { let multi: UnsafeMutableRawPointer }
        private let handle: Mutex<Handle?>
        init(_ multi: UnsafeMutableRawPointer) { handle = Mutex(Handle(multi: multi)) }
        func wake() {
            handle.withLock { if let h = $0 { ccurl_multi_wakeup(h.multi) } }
        }
        func disconnect() {
            handle.withLock { $0 = nil }
        }
    }
    private let waker: Waker

    /// The loop thread: add new transfers, drive all of them, finish completed ones and start
    /// their batches' next requests in the same pass.
    private func loop() {
        var finished: [(batch: HTTPTransfers, completion: HTTPCompletion)] = []
        while true {
            let (stop, new, newBatches) = shared.withLock { s in
                defer {
                    s.pending.removeAll()
                    s.pendingBatches.removeAll()
                }
                return (s.stopping, s.pending, s.pendingBatches)
            }
            batches.append(contentsOf: newBatches)
            if stop { break }
            for t in new { start(t) }
            startBatched()
            var running: Int32 = 0
            ccurl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let msg = ccurl_multi_info_read(multi, &left) {
                guard msg.pointee.msg == CURLMSG_DONE, let h = msg.pointee.easy_handle, let t = active[h] else { continue }
                let result = finish(t, msg.pointee.data.result)
                release(t, reuse: true)
                switch t.delivery {
                case .caller(let c): c.resume(with: result.mapError { $0 })
                case .batch(let b, let i): finished.append((b, HTTPCompletion(index: i, result: result)))
                }
            }
            if !finished.isEmpty {
                deliver(finished)
                finished.removeAll(keepingCapacity: true)
                // Refill the freed slots now: their requests go out in the next perform.
                if startBatched() > 0 { continue }
            }
            ccurl_multi_poll(multi, nil, 0, 1_000, nil)
        }
        for (_, t) in active {
            let e = FetchError(code: .other, message: "the HTTP client was shut down", url: t.request.url)
            release(t, reuse: false)
            switch t.delivery {
            case .caller(let c): c.resume(throwing: e)
            case .batch(let b, let i): b.complete([HTTPCompletion(index: i, result: .failure(e))])
            }
        }
        for b in batches { b.cancel() }
        let late = shared.withLock { s in
            defer {
                s.pendingBatches.removeAll()
                s.running = false
            }
            return s.pendingBatches
        }
        for b in late { b.cancel() }
    }

    /// Starts what every batch may start now; forgets finished batches and aborts the transfers
    /// of cancelled ones. Returns how many transfers it started.
    @discardableResult
    private func startBatched() -> Int {
        guard !batches.isEmpty else { return 0 }
        var started = 0
        batches.removeAll { b in
            if b.isCancelled {
                for (_, t) in active { if case .batch(let owner, _) = t.delivery, owner === b { release(t, reuse: true) } }
                return true
            }
            for i in b.startable() {
                start(Transfer(request: b.request(at: i), delivery: .batch(b, i)))
                started += 1
            }
            return b.isFinished
        }
        return started
    }

    /// Hands each batch its completions of this pass in one call.
    private func deliver(_ finished: [(batch: HTTPTransfers, completion: HTTPCompletion)]) {
        var rest = finished[...]
        while let first = rest.first {
            let group = rest.filter { $0.batch === first.batch }
            rest = rest.filter { $0.batch !== first.batch }[...]
            first.batch.complete(group.map(\.completion))
        }
    }

    /// Takes a transfer's handle off the multi handle and frees what the transfer owned; the
    /// handle is kept for the next request (or cleaned up).
    private func release(_ t: Transfer, reuse: Bool) {
        guard let h = t.handle else { return }
        active.removeValue(forKey: h)
        ccurl_multi_remove_handle(multi, h)
        _ = ccurl_setopt_slist(h, CURLOPT_HTTPHEADER, nil)
        ccurl_slist_free_all(t.headers)
        t.headers = nil
        Unmanaged.passUnretained(t.sink).release()
        t.handle = nil
        if reuse { idle.append(h) } else { ccurl_easy_cleanup(h) }
    }

    /// A reusable easy handle with the options every request shares.
    private func makeHandle() -> UnsafeMutableRawPointer {
        let h = ccurl_easy_init()!
        _ = ccurl_setopt_string(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = ccurl_setopt_long(h, CURLOPT_MAXREDIRS, configuration.maxRedirects)
        _ = ccurl_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(h, CURLOPT_SSL_VERIFYPEER, configuration.insecureSkipTLSVerify ? 0 : 1)
        _ = ccurl_setopt_long(h, CURLOPT_SSL_VERIFYHOST, configuration.insecureSkipTLSVerify ? 0 : 2)
        _ = ccurl_setopt_write_cb(h, CURLOPT_WRITEFUNCTION, curlWriteBody)
        return h
    }

    private func start(_ t: Transfer) {
        let h = idle.popLast() ?? makeHandle()
        let request = t.request
        for (name, value) in request.headers { t.headers = ccurl_slist_append(t.headers, "\(name): \(value)") }
        if request.passThrough {
            // libcurl's own defaults would be sent otherwise: the client's request goes as it came.
            for name in ["Accept", "Expect"] where !request.headers.contains(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) {
                t.headers = ccurl_slist_append(t.headers, "\(name):")
            }
        }
        // Every option that differs between requests is set here, for each one.
        _ = ccurl_setopt_string(h, CURLOPT_URL, request.url)
        _ = ccurl_setopt_long(h, CURLOPT_FOLLOWLOCATION, request.passThrough ? 0 : 1)
        _ = ccurl_setopt_long(h, CURLOPT_HTTP_CONTENT_DECODING, request.passThrough ? 0 : 1)
        if request.passThrough {
            _ = ccurl_setopt_ptr(h, CURLOPT_ACCEPT_ENCODING, nil)
            _ = ccurl_setopt_ptr(h, CURLOPT_USERAGENT, nil)
        } else {
            _ = ccurl_setopt_string(h, CURLOPT_ACCEPT_ENCODING, "")
            _ = ccurl_setopt_string(h, CURLOPT_USERAGENT, configuration.userAgent)
        }
        _ = ccurl_setopt_string(h, CURLOPT_PROTOCOLS_STR, request.allowFileScheme ? "http,https,file" : "http,https")
        // Timeouts come from flags: bounded to 1 ms … 1 day before they become integers.
        let timeout = request.timeout.isFinite ? min(max(request.timeout, 0.001), 86_400) : 86_400
        _ = ccurl_setopt_long(h, CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
        _ = ccurl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, Int(min(configuration.connectTimeout, timeout) * 1000))
        _ = ccurl_setopt_long(h, CURLOPT_MAXFILESIZE, request.maxBytes)
        _ = ccurl_setopt_slist(h, CURLOPT_HTTPHEADER, t.headers)
        // A reused handle may have sent a body before: GET resets it, then the verb and body.
        _ = ccurl_setopt_long(h, CURLOPT_NOBODY, 0)
        _ = ccurl_setopt_long(h, CURLOPT_HTTPGET, 1)
        _ = ccurl_setopt_ptr(h, CURLOPT_CUSTOMREQUEST, nil)
        // A HEAD answer has no body whatever its Content-Length says: libcurl must not wait for one.
        if request.method == "HEAD" { _ = ccurl_setopt_long(h, CURLOPT_NOBODY, 1) }
        if let body = request.body {
            _ = ccurl_setopt_long(h, CURLOPT_POSTFIELDSIZE, body.count)
            _ = body.withUnsafeBytes {
                ccurl_setopt_ptr(h, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        }
        if request.method != "GET" && request.method != "HEAD" && !(request.method == "POST" && request.body != nil) {
            _ = ccurl_setopt_string(h, CURLOPT_CUSTOMREQUEST, request.method)
        }
        _ = ccurl_setopt_ptr(h, CURLOPT_WRITEDATA, Unmanaged.passRetained(t.sink).toOpaque())
        t.handle = h
        t.started = ContinuousClock.now
        active[h] = t
        ccurl_multi_add_handle(multi, h)
    }

    private func finish(_ t: Transfer, _ rc: CURLcode) -> Result<HTTPResponse, FetchError> {
        let h = t.handle!
        let elapsed = ContinuousClock.now - t.started
        var status = 0
        _ = ccurl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &status)
        var effective: UnsafeMutablePointer<CChar>?
        _ = ccurl_getinfo_string(h, CURLINFO_EFFECTIVE_URL, &effective)
        let finalURL = effective.map { String(cString: $0) } ?? t.request.url
        guard rc == CURLE_OK else {
            return .failure(Self.error(rc, url: t.request.url, request: t.request, sink: t.sink, status: status))
        }
        var found: [String: String] = [:]
        for name in ["etag", "last-modified", "retry-after", "content-type", "link", "location", "cache-control", "age"] {
            var out: UnsafeMutablePointer<curl_header>?
            if ccurl_easy_header(h, name, 0, UInt32(CURLH_HEADER), -1, &out) == CURLHE_OK, let out {
                found[name] = String(cString: out.pointee.value)
            }
        }
        if t.request.url.hasPrefix("file:") && status == 0 { status = 200 }
        var response = HTTPResponse(status: status, url: finalURL, body: t.sink.bytes, headers: found, duration: elapsed)
        if t.request.passThrough {
            var previous: UnsafeMutablePointer<curl_header>?
            while let next = ccurl_easy_nextheader(h, UInt32(CURLH_HEADER), -1, previous) {
                response.headerLines.append((String(cString: next.pointee.name), String(cString: next.pointee.value)))
                previous = next
            }
            var firstByte: curl_off_t = 0
            if ccurl_getinfo_off(h, CURLINFO_STARTTRANSFER_TIME_T, &firstByte) == CURLE_OK { response.waited = .microseconds(firstByte) }
        }
        return .success(response)
    }

    private static func error(_ rc: CURLcode, url: String, request: HTTPRequest, sink: BodySink, status: Int) -> FetchError {
        let detail = String(cString: ccurl_easy_strerror(rc))
        switch rc {
        case CURLE_OPERATION_TIMEDOUT:
            return FetchError(
                code: .timeout, message: "no complete response within \(formatSeconds(request.timeout)) s", url: url)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_SEND_ERROR:
            return FetchError(code: .connection, message: "could not connect (\(detail)); check the URL and that the server is up", url: url)
        case CURLE_TOO_MANY_REDIRECTS:
            return FetchError(code: .redirects, message: "more than 5 redirects (a redirect loop?); fix the source URL", url: url)
        case CURLE_FILESIZE_EXCEEDED:
            return FetchError(code: .tooLarge, message: "the body is larger than \(request.maxBytes) bytes", url: url)
        case CURLE_WRITE_ERROR where sink.overflowed:
            return FetchError(code: .tooLarge, message: "the body is larger than \(request.maxBytes) bytes", url: url)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_BAD_CONTENT_ENCODING:
            return FetchError(code: .truncated, message: "the connection was cut before the whole body arrived (\(detail)); retry", url: url)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE:
            return FetchError(code: .tls, message: "TLS verification failed (\(detail)); the server's certificate is not trusted", url: url)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return FetchError(code: .invalidURL, message: "the URL is malformed or its scheme is not allowed here (\(detail))", url: url)
        case CURLE_FILE_COULDNT_READ_FILE:
            return FetchError(code: .connection, message: "cannot read the file; check the path", url: url)
        default:
            return FetchError(code: .other, message: "transfer failed: \(detail)", url: url, status: status == 0 ? nil : status)
        }
    }
}

func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? String(Int(s)) : String(format: "%.2f", s)
}

/// Collects a response body, refusing more than `limit` bytes.
final class BodySink {
    var bytes: [UInt8] = []
    let limit: Int
    var overflowed = false
    init(limit: Int) { self.limit = limit }
}

/// libcurl's write callback: a global function capturing nothing.
private func curlWriteBody(_ ptr: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let userdata else { return 0 }
    let sink = Unmanaged<BodySink>.fromOpaque(userdata).takeUnretainedValue()
    let n = size * count
    if sink.bytes.count + n > sink.limit {
        sink.overflowed = true
        return 0
    }
    if let ptr, n > 0 {
        ptr.withMemoryRebound(to: UInt8.self, capacity: n) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
    }
    return n
}
