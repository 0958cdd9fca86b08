import EventStore
import Foundation
import Logging
import Synchronization

// Requests with retries: the run's context, backoff, and every failed attempt recorded.

extension Fetcher {
    struct RunContext: Sendable {
        var source: SourceDefinition
        var run: String
        var options: FetchOptions
        /// The source's ingest gate: every body is passed through it before it becomes an event.
        var gate: IngestGate
        /// Retried attempts by reason, counted from every task of the run.
        let retries = RetryTally()
    }

    /// Retried attempts by reason (``FetchSummary/retried``), shared by a run's tasks.
    final class RetryTally: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func count(_ failure: FetchError) {
            let reason = failure.status.map(String.init) ?? failure.code.description
            counts.withLock { $0[reason, default: 0] += 1 }
        }
        var snapshot: [String: Int] { counts.withLock { $0 } }
    }

    /// GET with retries: connection errors, timeouts, cut bodies, 429 and 5xx are retried with
    /// exponential backoff and jitter (or the server's `Retry-After`, up to 60 s); every failed
    /// attempt is recorded as a `FetchFailed` event. Returns the first non-retryable response.
    func get(_ url: String, headers: [(name: String, value: String)], stage: String, context: RunContext, firstAttempt: Int = 1) async throws -> HTTPResponse {
        let request = request(url, headers: headers, context: context)
        var attempt = firstAttempt
        while true {
            var failure: FetchError
            do {
                let r = try await client.send(request)
                guard let f = retryableFailure(r, url: url) else { return r }
                failure = f
            } catch let e as FetchError {
                failure = e
            }
            guard try await recordAttempt(&failure, attempt: attempt, url: url, stage: stage, context: context) else { throw failure }
            try await sleeper.sleep(seconds: backoff(failure, attempt: attempt, options: context.options))
            attempt += 1
        }
    }

    /// Records failed attempt `attempt` at `url` as a `FetchFailed` event (marking `failure`
    /// recorded) and returns whether it will be retried: a retryable failure within `--retries`.
    func recordAttempt(_ failure: inout FetchError, attempt: Int, url: String, stage: String, context: RunContext) async throws -> Bool {
        let willRetry = failure.isRetryable && attempt <= context.options.retries
        try await recordFailure(context, url: url, stage: stage, error: failure, attempt: attempt, willRetry: willRetry, status: failure.status)
        if willRetry { context.retries.count(failure) }
        failure.recorded = true
        return willRetry
    }

    /// The request for `url` under the run's options.
    func request(_ url: String, headers: [(name: String, value: String)], context: RunContext) -> HTTPRequest {
        let o = context.options
        return HTTPRequest(
            url: url, headers: headers, timeout: o.timeout, maxBytes: o.maxBytes,
            allowFileScheme: context.source.url.lowercased().hasPrefix("file:"))
    }

    /// A complete response that still counts as a failed attempt (429 or 5xx), or nil.
    func retryableFailure(_ r: HTTPResponse, url: String) -> FetchError? {
        guard r.status == 429 || r.status >= 500 else { return nil }
        return FetchError(
            code: .http, message: "HTTP \(r.status) (server error or rate limit)", url: url, status: r.status,
            retryAfter: r.headers["retry-after"].flatMap(Self.retryAfterSeconds))
    }

    /// How long to wait before attempt `attempt + 1`: the server's `Retry-After`, else
    /// exponential back-off with jitter; at most 60 s.
    func backoff(_ failure: FetchError, attempt: Int, options o: FetchOptions) -> Double {
        let exponential = min(o.maxBackoff, o.baseBackoff * pow(2, Double(attempt - 1))) * Double.random(in: 0.5...1.0)
        return min(60, failure.retryAfter ?? exponential)
    }

    /// `Retry-After` as seconds: an integer, or an HTTP date.
    static func retryAfterSeconds(_ value: String) -> Double? {
        if let s = Double(value.trimmingCharacters(in: .whitespaces)) { return max(0, s) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return f.date(from: value).map { max(0, $0.timeIntervalSinceNow) }
    }

    func recordFailure(
        _ context: RunContext, url: String, stage: String, error: any Error, attempt: Int, willRetry: Bool, status: Int? = nil,
        extra: [(key: String, value: String)] = [], recordedAt: Timestamp? = nil
    ) async throws {
        let fe = error as? FetchError
        var meta =
            common(context) + [
                ("url", url), ("stage", stage), ("error", fe?.code.description ?? "other"),
                ("message", String((fe?.message ?? "\(error)").prefix(500))),
                ("attempt", String(attempt)), ("willRetry", String(willRetry))
            ]
        if let status { meta.append(("status", String(status))) }
        meta += extra
        _ = try await store.append(NewEvent(type: DataEvents.fetchFailed, recordedAt: recordedAt, stream: context.source.name, metadata: meta))
        logger.debug("fetch attempt failed", metadata: ["source": "\(context.source.name)", "url": "\(url)", "attempt": "\(attempt)"])
    }
}
