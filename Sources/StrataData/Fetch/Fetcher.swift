public import EventStore
import Foundation
public import Logging
import Synchronization

/// Waits between retries; injected so tests control time.
public protocol Sleeper: Sendable {
    func sleep(seconds: Double) async throws
}

public struct TaskSleeper: Sleeper {
    public init() {}
    public func sleep(seconds: Double) async throws { try await Task.sleep(for: .seconds(seconds)) }
}

/// Where a fetch is, for a progress display.
public struct FetchProgress: Sendable, Equatable {
    public enum Stage: String, Sendable { case list, details, images }
    public var source: String
    public var stage: Stage
    public var done: Int
    /// Known for details and images; nil while paging.
    public var total: Int?

    public init(source: String, stage: Stage, done: Int, total: Int?) {
        self.source = source; self.stage = stage; self.done = done; self.total = total
    }
}

public struct FetchOptions: Sendable {
    /// Called as pages, details and images complete (from any task).
    public var progress: (@Sendable (FetchProgress) -> Void)?
    public var details = false
    /// Which stored details a fetch with `details` asks for again.
    public var detailPolicy = DetailPolicy.all
    /// With ``DetailPolicy/all``: revalidate only details last seen more than this many seconds
    /// ago (nil: every one).
    public var detailMaxAge: Double?
    public var images = false
    /// Detail and image requests in flight at once.
    public var concurrency = 8
    /// Stop after this many list pages (the pass is then incomplete: nothing is removed).
    public var pageLimit: Int?
    public var timeout: Double = 30
    public var maxBytes = 64 << 20
    /// Extra attempts after a retryable failure.
    public var retries = 3
    public var baseBackoff: Double = 0.5
    public var maxBackoff: Double = 30
    /// Where `$VAR` in header templates is looked up.
    public var environment: [String: String] = ProcessInfo.processInfo.environment
    public init() {}
}

/// Which details a fetch with details asks for.
public enum DetailPolicy: String, Sendable, CaseIterable {
    /// Every stored detail is revalidated (a conditional request: an unchanged one costs a 304),
    /// plus new, changed or reappeared items and any item still without one: a detail that
    /// changes while its list entry does not is noticed.
    case all
    /// Only new, changed or reappeared items and items still without a detail (cheaper; misses
    /// details that change on their own).
    case changed
}

/// What one fetch of one source did.
public struct FetchSummary: Sendable, Equatable {
    public var source: String
    public var run: String
    public var pages = 0
    public var pagesNotModified = 0
    /// List pages whose body was parsed in this pass (an unchanged page whose next URL is known
    /// is not).
    public var pagesParsed = 0
    public var complete = false
    public var added = 0
    public var changed = 0
    public var removed = 0
    public var reappeared = 0
    public var details = 0
    public var detailsNotModified = 0
    public var images = 0
    public var bytes = 0
    public var failures: [String] = []
    public var seconds: Double = 0
    /// Attempts that failed and were tried again, by why: `429`, `503`, `timeout`, … (each
    /// recorded as a `FetchFailed` event with `willRetry`).
    public var retried: [String: Int] = [:]
}

/// Fetches sources into the store: every response (and every failed attempt) becomes an event.
///
/// The list pages of one pass are validated (JSON, items, ids) as they arrive and appended
/// together with their `FetchCompleted` in one transaction, so a failed or killed pass changes no
/// item; only a complete pass removes items it did not see. Details download while the list
/// pages (those asked for whatever the list holds) and after it, and are appended in group
/// commits after the list's transaction; images follow.
public final class Fetcher: Sendable {
    let store: EventStore
    let client: any HTTPClient
    let sleeper: any Sleeper
    let logger: Logger

    public init(store: EventStore, client: any HTTPClient, sleeper: any Sleeper = TaskSleeper(), logger: Logger = Logger(label: "strata.fetch")) {
        self.store = store
        self.client = client
        self.sleeper = sleeper
        self.logger = logger
    }

    // MARK: List

    /// Fetches every page of `source`, then details and images as asked.
    /// - Throws: ``FetchError`` for the list (after recording a `FetchFailed` event); detail and
    ///   image failures are recorded and listed in the summary's `failures` instead.
    public func fetch(_ source: SourceDefinition, options: FetchOptions = FetchOptions()) async throws -> FetchSummary {
        let clock = ContinuousClock()
        let started = clock.now
        let run = UUID().uuidString.lowercased()
        var summary = FetchSummary(source: source.name, run: run)
        let context = RunContext(source: source, run: run, options: options)
        let headers: [(name: String, value: String)]
        do { headers = try source.resolvedHeaders(environment: options.environment, secrets: SourceSecrets(storePath: store.path)) } catch {
            try await recordFailure(context, url: source.url, stage: "list", error: error, attempt: 1, willRetry: false)
            throw error
        }
        let extraction = ItemExtraction(source)
        // Details start downloading while the list pages; they are appended after it.
        let details = try await startDetails(source, headers: headers, context: context)
        var finished = false
        defer { if !finished { details?.abandon() } }
        var events: [NewEvent] = []
        // The detail-URL field of every item of the pass, read from the pages already parsed, so
        // choosing the details to fetch parses no stored item (later pages win, as they do in
        // the items projection).
        var detailFields: [String: JSONValue] = [:]
        var url = firstPageURL(source)
        var visited = Set<String>()
        var passURLs: [String] = []
        var page = 1
        var complete = false
        // Conditional requests already answered for pages an unchanged list is known to lead to
        // (``prefetchChain``), with the validators they were sent with.
        var prefetched: [String: ReadAhead] = [:]
        while true {
            guard visited.insert(url).inserted else {
                let e = FetchError(
                    code: .redirects,
                    message: source.cursorPath.map { "the cursor at \($0) repeats one already followed (a loop); check --cursor-path" }
                        ?? "the next-page links loop back to a page already fetched", url: url)
                try await recordFailure(context, url: url, stage: "list", error: e, attempt: 1, willRetry: false)
                try await recordUnused(prefetched, context: context)
                throw e
            }
            passURLs.append(url)
            let cached: Validators?
            let response: HTTPResponse
            do {
                if let ahead = prefetched.removeValue(forKey: url) {
                    // Whatever the read-ahead got is this page's answer: a 304, a changed page, or a
                    // failed first attempt that is recorded and retried here. Never asked twice.
                    cached = ahead.validators
                    response = try await answer(ahead, url: url, headers: headers + conditionalHeaders(cached), context: context)
                } else {
                    cached = try await validators(for: url)
                    response = try await get(url, headers: headers + conditionalHeaders(cached), stage: "list", context: context)
                }
            } catch {
                // The pass ends here: what the read-ahead got for later pages is recorded too.
                try await recordUnused(prefetched, context: context)
                throw error
            }
            var meta =
                common(context) + [
                    ("page", String(page)), ("url", url), ("status", String(response.status)),
                    ("durationMs", milliseconds(response.duration))
                ] + extraction.metadata
            if let etag = response.headers["etag"] { meta.append(("etag", etag)) }
            if let lm = response.headers["last-modified"] { meta.append(("lastModified", lm)) }
            // A 304 carries no Link header: page on with the one stored beside the body.
            var responseHeaders = response.headers
            if response.status == 304, responseHeaders["link"] == nil, let link = cached?.link { responseHeaders["link"] = link }
            if let link = responseHeaders["link"] { meta.append(("link", link)) }
            // A 304 without an ETag still records the one it confirmed.
            if response.status == 304, response.headers["etag"] == nil, let etag = cached?.etag { meta.append(("etag", etag)) }
            let paging = Self.pagingFingerprint(source, page: page)
            let needsItems = options.details && source.detailURL == nil && source.detailURLField != nil
            if response.status == 304, let cached, let ref = PayloadReference(hashHex: cached.sha256, size: cached.size),
                !needsItems, cached.paging == paging, let known = cached.next
            {
                // Unchanged, and where it leads was worked out when it was fetched with this same
                // paging: the stored page is neither read nor parsed.
                meta += [("next", known), ("paging", paging)]
                events.append(NewEvent(type: DataEvents.pageNotModified, stream: source.name, metadata: meta, payloadReference: ref))
                summary.pagesNotModified += 1
                summary.pages += 1
                options.progress?(FetchProgress(source: source.name, stage: .list, done: summary.pages, total: nil))
                guard !known.isEmpty else { complete = true; break }
                if let limit = options.pageLimit, page >= limit { break }
                url = known
                page += 1
                if prefetched.isEmpty, options.concurrency > 1 {
                    prefetched = try await prefetchChain(
                        from: url, page: page, source: source, headers: headers, context: context,
                        limit: options.pageLimit.map { $0 - page + 1 } ?? 64)
                }
                continue
            }
            let body: [UInt8]
            if response.status == 304, let cached, let ref = PayloadReference(hashHex: cached.sha256, size: cached.size),
                let stored = try await store.body(sha256: cached.sha256)
            {
                body = stored
                events.append(NewEvent(type: DataEvents.pageNotModified, stream: source.name, metadata: meta, payloadReference: ref))
                summary.pagesNotModified += 1
            } else if (200..<300).contains(response.status) {
                body = response.body
                events.append(NewEvent(type: DataEvents.pageFetched, stream: source.name, metadata: meta, payload: body))
                summary.bytes += body.count
            } else {
                let e = FetchError(code: .http, message: Self.listStatusMessage(response.status), url: url, status: response.status)
                try await recordFailure(context, url: url, stage: "list", error: e, attempt: 1, willRetry: false, status: response.status)
                try await recordUnused(prefetched, context: context)
                throw e
            }
            let (document, items): (JSONValue, [(key: String, item: JSONValue)])
            summary.pagesParsed += 1
            do { (document, items) = try extraction.items(in: body, url: url) } catch {
                try await recordFailure(context, url: url, stage: "list", error: error, attempt: 1, willRetry: false, status: response.status)
                try await recordUnused(prefetched, context: context)
                throw error
            }
            if options.details, source.detailURL == nil, let field = source.detailURLField {
                for (key, item) in items { detailFields[key] = item.value(atPath: field) ?? .null }
            }
            if let details { offer(items, to: details) }
            summary.pages += 1
            options.progress?(FetchProgress(source: source.name, stage: .list, done: summary.pages, total: nil))
            let next = nextPageURL(source, current: url, page: page, document: document, items: items, headers: responseHeaders)
            // Where this page leads, for an unchanged re-fetch to page on without parsing it.
            events[events.count - 1].metadata += [("next", next ?? ""), ("paging", paging)]
            guard let next else {
                complete = true
                break
            }
            if let limit = options.pageLimit, page >= limit { break }
            url = next
            page += 1
        }
        if complete && summary.pagesNotModified == summary.pages, try await itemsFollowPass(of: source.name, urls: passURLs) {
            // Every page answered 304 and the items are still what these pages made them: one
            // compact fact for the pass instead of a page event per page; nothing to mark or sweep.
            events = [
                NewEvent(
                    type: DataEvents.listNotModified, stream: source.name,
                    metadata: common(context) + [("pages", String(summary.pages))])
            ]
        } else {
            events.append(
                NewEvent(
                    type: DataEvents.fetchCompleted, stream: source.name,
                    metadata: common(context) + [("pages", String(events.count)), ("complete", String(complete))]))
        }
        // Read-ahead answers the pass did not reach (it stopped, or a changed page led elsewhere)
        // are recorded after the pass's own events, so every response received is in the log.
        events += unusedReadAhead(prefetched, context: context)
        let outcomes = try await store.append(events)
        let runStart = outcomes.first!.seq
        summary.complete = complete
        // The list pass is in the log: the details downloaded so far may follow it.
        details?.gate.open()
        try await countChanges(&summary, source: source.name, since: runStart)
        if let details {
            try await finishDetails(details, since: runStart, detailFields: detailFields, summary: &summary)
        }
        finished = true
        if options.images, source.image != nil {
            try await fetchImages(source, headers: headers, context: context, summary: &summary)
        }
        summary.seconds = seconds(clock.now - started)
        summary.retried = context.retries.snapshot
        logger.debug("fetched", metadata: ["source": "\(source.name)", "run": "\(run)", "pages": "\(summary.pages)"])
        return summary
    }

    /// Whether the items of `source` are still what a complete pass over `urls` (in this order)
    /// made them: the newest event that changes them is that pass's `FetchCompleted`. A
    /// `ListNotModified` changes nothing, so it is not looked at. An import, a partial pass, a
    /// source definition or change since then (or no pass at all) means they are not, and an
    /// unchanged pass must then be written out in full to put its items back.
    func itemsFollowPass(of source: String, urls: [String]) async throws -> Bool {
        let changing = [
            DataEvents.fetchCompleted, DataEvents.pageFetched, DataEvents.pageNotModified,
            DataEvents.sourceDefined, DataEvents.sourceChanged, DataEvents.sourceRemoved
        ]
        guard let newest = try await store.newestEvent(inStream: source, ofTypes: changing),
            newest.type == DataEvents.fetchCompleted, newest[metadata: "complete"] == "true",
            newest[metadata: "pages"] == String(urls.count), UInt64(urls.count) < newest.seq
        else { return false }
        // The pass's pages were appended in the same batch, right before its FetchCompleted.
        let pages = try await store.events(EventQuery(fromSeq: newest.seq - UInt64(urls.count), toSeq: newest.seq - 1))
        return pages.count == urls.count
            && zip(pages, urls).allSatisfy { page, url in
                page.stream == source && page[metadata: "run"] == newest[metadata: "run"] && page[metadata: "import"] == nil
                    && (page.type == DataEvents.pageFetched || page.type == DataEvents.pageNotModified) && page[metadata: "url"] == url
            }
    }

    /// Records local JSON files as complete snapshots of the source's list, exactly as if fetched,
    /// all observed at `recordedAt` (nil: now); stops at the first invalid one.
    public func importSnapshots(_ source: SourceDefinition, files: [(path: String, body: [UInt8])], recordedAt: Timestamp?) async throws -> ImportSummary {
        let snapshots = AsyncThrowingStream<Snapshot, any Error> { continuation in
            for (path, body) in files {
                continuation.yield(Snapshot(url: URL(fileURLWithPath: path).absoluteString, body: body, recordedAt: recordedAt))
            }
            continuation.finish()
        }
        return try await importSnapshots(source, snapshots: snapshots)
    }

    /// Counts the items this run added, changed, removed or brought back. `everyVersion`: every
    /// version since `since` counts (an import of many snapshots: the sum of what each did), not
    /// only each item's newest.
    func countChanges(_ summary: inout FetchSummary, source: String, since: UInt64, everyVersion: Bool = false) async throws {
        let kinds: [ChangeKind] = try await store.documents(projection: "items") { reader in
            // Bookkeeping and history headers only: no document is parsed.
            let touched = try reader.summaries(collection: source).filter { $0.summary.changedSeq >= since }
            if everyVersion { return try touched.flatMap { try reader.changeKinds(collection: source, key: $0.key, since: since) } }
            return try touched.compactMap { try reader.changeKind(collection: source, key: $0.key, at: $0.summary.changedSeq) }
        }
        for k in kinds {
            switch k {
            case .added: summary.added += 1
            case .changed: summary.changed += 1
            case .removed: summary.removed += 1
            case .reappeared: summary.reappeared += 1
            }
        }
    }

    // MARK: Requests with retries

    struct RunContext: Sendable {
        var source: SourceDefinition
        var run: String
        var options: FetchOptions
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

    // MARK: Helpers

    struct Validators: Sendable {
        var etag: String?
        var lastModified: String?
        var link: String?
        var sha256: String
        var size: Int
        /// The page's next URL ("" for the last page) as worked out when it was fetched, and the
        /// paging it was worked out with (``pagingFingerprint(_:page:)``).
        var next: String?
        var paging: String?
    }

    /// The paging settings a page's next URL depends on, and its number, as 16 hex digits
    /// (FNV-1a): a stored next URL is used only under the same paging.
    static func pagingFingerprint(_ s: SourceDefinition, page: Int) -> String {
        let parts: [String?] = [
            String(page), s.url, s.items, s.id.joined(separator: "\u{1}"), s.pageParam, s.pageSize.map(String.init), s.sizeParam,
            s.cursorPath, s.cursorParam, s.offsetParam, s.totalPath, s.afterParam, s.hasMorePath, s.next, s.limitParam
        ]
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in parts.map({ $0 ?? "\u{0}" }).joined(separator: "\u{2}").utf8 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }

    func validators(for url: String) async throws -> Validators? {
        try await validators(for: [url])[url]
    }

    /// The stored validators of `urls` (those that have any), read in one snapshot.
    func validators(for urls: [String]) async throws -> [String: Validators] {
        try await store.documents(projection: "http-cache") { reader in
            var out: [String: Validators] = [:]
            for url in urls { out[url] = try Self.validators(url, reader) }
            return out
        }
    }

    static func validators(_ url: String, _ reader: DocumentReader) throws -> Validators? {
        guard let s = try reader.state(collection: "http", key: url), !s.removed,
            case .string(let sha)? = s.document.value(atPath: "sha256"), case .number(let size)? = s.document.value(atPath: "size")
        else { return nil }
        var v = Validators(sha256: sha, size: Int(size) ?? 0)
        if case .string(let e)? = s.document.value(atPath: "etag") { v.etag = e }
        if case .string(let m)? = s.document.value(atPath: "lastModified") { v.lastModified = m }
        if case .string(let l)? = s.document.value(atPath: "link") { v.link = l }
        if case .string(let n)? = s.document.value(atPath: "next") { v.next = n }
        if case .string(let p)? = s.document.value(atPath: "paging") { v.paging = p }
        return v
    }

    /// Asks, `--concurrency` at a time, for the pages an unchanged list is known to lead to from
    /// `url` (page `page`): the chain of recorded next URLs under the same paging, up to `limit`
    /// pages, each with its validators. Only what answered comes back; the pass still takes the
    /// pages one by one, in order, and asks again for any that did not answer 304.
    /// A list page asked for ahead of the loop, with the validators it was asked with, and what
    /// came back: a response, or a failure to connect or read.
    struct ReadAhead: Sendable {
        var result: Result<HTTPResponse, FetchError>
        var validators: Validators
    }

    /// The response for a page asked for ahead: the one received, unless it is a retryable
    /// failure (429, 5xx, a cut connection), which is recorded as attempt 1 and retried as
    /// ``get(_:headers:stage:context:firstAttempt:)`` retries.
    func answer(_ ahead: ReadAhead, url: String, headers: [(name: String, value: String)], context: RunContext) async throws -> HTTPResponse {
        var failure: FetchError
        switch ahead.result {
        case .success(let r):
            guard let f = retryableFailure(r, url: url) else { return r }
            failure = f
        case .failure(let e):
            failure = e
        }
        guard try await recordAttempt(&failure, attempt: 1, url: url, stage: "list", context: context) else { throw failure }
        try await sleeper.sleep(seconds: backoff(failure, attempt: 1, options: context.options))
        return try await get(url, headers: headers, stage: "list", context: context, firstAttempt: 2)
    }

    /// Events for read-ahead answers no page used: `ReadAheadDiscarded` with the URL and status
    /// (a response) or the failure (none). Their items are not applied: the pass did not reach them.
    func unusedReadAhead(_ unused: [String: ReadAhead], context: RunContext) -> [NewEvent] {
        unused.sorted { $0.key < $1.key }.map { url, ahead in
            var meta = common(context) + [("url", url)]
            switch ahead.result {
            case .success(let r):
                meta += [("status", String(r.status)), ("durationMs", milliseconds(r.duration))]
                if let etag = r.headers["etag"] { meta.append(("etag", etag)) }
            case .failure(let e):
                meta += [("error", e.code.description), ("message", String(e.message.prefix(500)))]
            }
            if case .success(let r) = ahead.result, (200..<300).contains(r.status), !r.body.isEmpty {
                return NewEvent(type: DataEvents.readAheadDiscarded, stream: context.source.name, metadata: meta, payload: r.body)
            }
            return NewEvent(type: DataEvents.readAheadDiscarded, stream: context.source.name, metadata: meta)
        }
    }

    /// Appends ``unusedReadAhead(_:context:)`` on its own, for a pass that failed.
    func recordUnused(_ unused: [String: ReadAhead], context: RunContext) async throws {
        let events = unusedReadAhead(unused, context: context)
        if !events.isEmpty { _ = try await store.append(events) }
    }

    /// The message of a list page answered with a status that is neither success nor retried.
    static func listStatusMessage(_ status: Int) -> String {
        switch status {
        case 401, 403:
            "HTTP \(status) for the list: the API refused the credentials; check the source's auth header (`strata source show`) and that its variables are set"
        case 404, 410: "HTTP \(status) for the list: no such resource; check the source's URL"
        default: "HTTP \(status) for the list; check the URL and any auth header"
        }
    }

    private func prefetchChain(
        from url: String, page: Int, source: SourceDefinition, headers: [(name: String, value: String)],
        context: RunContext, limit: Int
    ) async throws -> [String: ReadAhead] {
        let chain: [(url: String, validators: Validators)] = try await store.documents(projection: "http-cache") { reader in
            var out: [(String, Validators)] = [], seen = Set<String>(), next = url, p = page
            while out.count < limit, seen.insert(next).inserted, let v = try Self.validators(next, reader), v.paging == Self.pagingFingerprint(source, page: p),
                let after = v.next
            {
                out.append((next, v))
                if after.isEmpty { break }
                (next, p) = (after, p + 1)
            }
            return out
        }
        guard chain.count > 1 else { return [:] }
        let transfers = client.transfers(
            chain.map { request($0.url, headers: headers + conditionalHeaders($0.validators), context: context) },
            concurrency: context.options.concurrency)
        defer { transfers.cancel() }
        var answered: [String: ReadAhead] = [:]
        while let group = await transfers.next() {
            for c in group { answered[chain[c.index].url] = ReadAhead(result: c.result, validators: chain[c.index].validators) }
        }
        return answered
    }

    func conditionalHeaders(_ v: Validators?) -> [(name: String, value: String)] {
        var out: [(String, String)] = []
        if let e = v?.etag { out.append(("If-None-Match", e)) }
        if let m = v?.lastModified { out.append(("If-Modified-Since", m)) }
        return out
    }

    func common(_ context: RunContext) -> [(key: String, value: String)] {
        [("source", context.source.name), ("run", context.run)]
    }

    func milliseconds(_ d: Duration) -> String { String(Int(seconds(d) * 1000)) }

    private func firstPageURL(_ source: SourceDefinition) -> String {
        let limit = source.limitQuery
        if let p = source.pageParam, let size = source.pageSize {
            return withQuery(source.url, [(p, "1"), (source.sizeParam, String(size))])
        }
        if let offset = source.offsetParam { return withQuery(source.url, [(offset, "0")] + limit) }
        return limit.isEmpty ? source.url : withQuery(source.url, limit)
    }

    private func nextPageURL(
        _ source: SourceDefinition, current: String, page: Int, document: JSONValue,
        items: [(key: String, item: JSONValue)], headers: [String: String]
    ) -> String? {
        let limit = source.limitQuery
        if let p = source.pageParam, let size = source.pageSize {
            guard items.count >= size else { return nil }
            return withQuery(source.url, [(p, String(page + 1)), (source.sizeParam, String(size))])
        }
        if let path = source.cursorPath, let param = source.cursorParam {
            // A cursor token in the body, sent back as a parameter; none (or null, or "") ends it.
            let token: String? =
                switch document.value(atPath: path) {
                case .string(let s)?: s
                case .number(let n)?: n
                default: nil
                }
            guard let token, !token.isEmpty else { return nil }
            return withQuery(source.url, [(param, token)] + limit)
        }
        if let offsetParam = source.offsetParam, let size = source.pageSize {
            // Offset/limit: a short or empty page ends it, and so does reaching the total.
            guard items.count >= size, !items.isEmpty else { return nil }
            let next = page * size
            if let path = source.totalPath, case .number(let n)? = document.value(atPath: path), let total = Int(n), next >= total { return nil }
            return withQuery(source.url, [(offsetParam, String(next))] + limit)
        }
        if let afterParam = source.afterParam {
            // Starting after the last id: an empty page, or a has-more flag that is not true, ends it.
            guard let last = items.last else { return nil }
            if let path = source.hasMorePath, document.value(atPath: path) != .bool(true) { return nil }
            return withQuery(source.url, [(afterParam, last.key)] + limit)
        }
        if let path = source.next {
            guard case .string(let raw)? = document.value(atPath: path), !raw.isEmpty else { return nil }
            return resolve(raw, against: current)
        }
        if let link = headers["link"], let next = Self.nextLink(link) { return resolve(next, against: current) }
        return nil
    }

    /// The `rel="next"` target of a `Link` header.
    static func nextLink(_ header: String) -> String? {
        for part in header.split(separator: ",") {
            let segs = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = segs.first, first.hasPrefix("<"), first.hasSuffix(">") else { continue }
            if segs.dropFirst().contains(where: { $0.replacingOccurrences(of: "\"", with: "").lowercased() == "rel=next" }) {
                return String(first.dropFirst().dropLast())
            }
        }
        return nil
    }

    private func withQuery(_ url: String, _ items: [(String, String)]) -> String {
        guard var c = URLComponents(string: url) else { return url }
        var q = (c.queryItems ?? []).filter { item in !items.contains { $0.0 == item.name } }
        q += items.map { URLQueryItem(name: $0.0, value: $0.1) }
        c.queryItems = q
        return c.string ?? url
    }
}

/// Resolves a possibly relative URL against `base`. A result must stay http(s) when the base is
/// http(s): a server cannot point Strata at `file://` (or any other scheme).
public func resolve(_ raw: String, against base: String) -> String? {
    BaseURL(base).resolve(raw)
}

/// A URL that others are resolved against (``resolve(_:against:)``), parsed once: a page of
/// detail URLs resolved against one list URL parses the list URL once, not once per item.
struct BaseURL: Sendable {
    private let url: URL?
    /// Results must stay http(s).
    private let web: Bool
    /// `scheme://authority` of a plain absolute base (``isPlainAbsolute(_:)``), which a
    /// path-absolute reference (`/items/5`) is appended to.
    private let origin: String?

    init(_ base: String) {
        url = URL(string: base)
        let scheme = url?.scheme?.lowercased()
        web = scheme == "http" || scheme == "https"
        var base = base
        origin = base.withUTF8 { b in Self.plainAbsoluteEnd(b).map { String(decoding: b[..<$0], as: UTF8.self) } }
    }

    /// The absolute URL `raw` names, read against this base; nil when it names none, or one
    /// that is not http(s) under an http(s) base.
    ///
    /// Foundation resolves it (`URL(string:relativeTo:)`), except for the two forms detail and
    /// image URLs take, which are worked out from the bytes as Foundation would (about 3 µs
    /// each, twice per detail of a fetch): an absolute http(s) URL with a plain host
    /// (``isPlainAbsolute(_:)``: itself), and a path-absolute reference without dot segments
    /// under such a base (the base's `scheme://authority` and the reference).
    func resolve(_ raw: String) -> String? {
        guard let url else { return nil }
        if Self.isPlainAbsolute(raw) { return raw }
        if let origin, Self.isPlainPath(raw) { return origin + raw }
        guard let u = URL(string: raw, relativeTo: url)?.absoluteURL, let scheme = u.scheme?.lowercased() else { return nil }
        if web { guard scheme == "http" || scheme == "https" else { return nil } }
        return u.absoluteString
    }

    /// Whether `raw` is an absolute http(s) URL that Foundation resolves to itself: a scheme
    /// `http://` or `https://` (any case), a plain host and port (``authorityEnd(_:)``), then
    /// only characters a URL may hold as they are (``isPlainRest(_:from:dotSegments:)``).
    /// Foundation keeps such a URL byte for byte, dot segments included, and only
    /// percent-encodes what falls outside that set.
    static func isPlainAbsolute(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { b in plainAbsoluteEnd(b) != nil }
    }

    /// Where the authority of `b` ends when `b` is a plain absolute URL (``isPlainAbsolute(_:)``).
    private static func plainAbsoluteEnd(_ b: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let end = authorityEnd(b), isPlainRest(b, from: end, dotSegments: true) else { return nil }
        return end
    }

    /// A plain absolute URL (``isPlainAbsolute(_:)``) cut as `URLComponents` cuts it: its host
    /// and port (the port as a number prints it: `h:080` is `h:80`), and its path (`/` when
    /// empty) and query, without the fragment. Nil for any other URL.
    static func splitPlain(_ url: String) -> (host: String, target: String)? {
        var url = url
        return url.withUTF8 { b in
            guard let end = plainAbsoluteEnd(b) else { return nil }
            let hostStart = b[4] == 0x3A ? 7 : 8  // after `http://` or `https://`
            var host = String(decoding: b[hostStart..<end], as: UTF8.self)
            if let colon = host.utf8.firstIndex(of: 0x3A), let port = Int(host[host.index(after: colon)...]) {
                host = "\(host[..<colon]):\(port)"
            }
            let fragment = b[end...].firstIndex(of: 0x23) ?? b.count
            let query = b[end..<fragment].firstIndex(of: 0x3F) ?? fragment
            let path = query > end ? String(decoding: b[end..<query], as: UTF8.self) : "/"
            return (host, path + String(decoding: b[query..<fragment], as: UTF8.self))
        }
    }

    /// Whether `raw` is a path-absolute reference (`/…`, not `//…`) of plain characters whose
    /// path has no `.` or `..` segment (which Foundation would remove).
    static func isPlainPath(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { b in
            guard b.count > 0, b[0] == 0x2F, b.count == 1 || b[1] != 0x2F else { return false }
            return isPlainRest(b, from: 0, dotSegments: false)
        }
    }

    /// Where the authority of a plain absolute http(s) URL ends: after `http://` or `https://`
    /// (any case), a host of letters, digits and `-._~`, then perhaps a port of one to five
    /// digits below 65,536, followed by the end, `/`, `?` or `#`. Nil for anything else (user
    /// info, IPv6 hosts, other schemes: Foundation's to resolve).
    static func authorityEnd(_ b: UnsafeBufferPointer<UInt8>) -> Int? {
        func lower(_ c: UInt8) -> UInt8 { c | 0x20 }
        var i: Int
        guard b.count > 8, lower(b[0]) == 0x68, lower(b[1]) == 0x74, lower(b[2]) == 0x74, lower(b[3]) == 0x70 else { return nil }
        if b[4] == 0x3A { i = 5 } else if lower(b[4]) == 0x73, b[5] == 0x3A { i = 6 } else { return nil }
        guard i + 2 < b.count, b[i] == 0x2F, b[i + 1] == 0x2F else { return nil }
        i += 2
        let hostStart = i
        while i < b.count, b[i] < 0x80, hostBytes[Int(b[i])] { i += 1 }
        guard i > hostStart else { return nil }
        if i < b.count, b[i] == 0x3A {
            i += 1
            var port = 0, digits = 0
            while i < b.count, (0x30...0x39).contains(b[i]) {
                port = port * 10 + Int(b[i] - 0x30)
                digits += 1
                i += 1
                if digits > 5 { return nil }
            }
            guard digits > 0, port < 65_536 else { return nil }
        }
        guard i == b.count || b[i] == 0x2F || b[i] == 0x3F || b[i] == 0x23 else { return nil }
        return i
    }

    /// Whether `b[from...]` holds only characters a URL may hold as they are (RFC 3986's
    /// unreserved and delimiter characters, `%` before two hex digits) and at most one `#`;
    /// unless `dotSegments`, also no `.` or `..` segment in its path (before `?` or `#`).
    static func isPlainRest(_ b: UnsafeBufferPointer<UInt8>, from: Int, dotSegments: Bool) -> Bool {
        var i = from
        var fragments = 0
        var inPath = true
        while i < b.count {
            let c = b[i]
            if c == 0x25 {
                guard i + 2 < b.count, b[i + 1].isHexDigit, b[i + 2].isHexDigit else { return false }
                i += 3
                continue
            }
            if c == 0x3F || c == 0x23 { inPath = false }
            if c == 0x23 { fragments += 1; if fragments > 1 { return false } }
            guard c < 0x80, plainURLBytes[Int(c)] else { return false }
            // `/.` then the end of the path, `/` or another `.`: a dot segment (or, for `/..x`,
            // close enough to one to leave to Foundation).
            if !dotSegments, inPath, c == 0x2F, i + 1 < b.count, b[i + 1] == 0x2E {
                guard i + 2 < b.count else { return false }
                let n = b[i + 2]
                if n == 0x2F || n == 0x2E || n == 0x3F || n == 0x23 { return false }
            }
            i += 1
        }
        return true
    }
}

/// ASCII bytes a URL holds as they are: letters, digits, `-._~` and the delimiters
/// `:/?#@!$&'()*+,;=` (not `[` and `]`, which only an IPv6 host may hold).
private let plainURLBytes: [Bool] = (0..<128).map { c in
    let u = UInt8(c)
    return (0x30...0x39).contains(u) || (0x41...0x5A).contains(u) || (0x61...0x7A).contains(u) || "-._~:/?#@!$&'()*+,;=".utf8.contains(u)
}

/// ASCII bytes of a host the shortcut takes: letters, digits and `-._~`.
private let hostBytes: [Bool] = (0..<128).map { c in
    let u = UInt8(c)
    return (0x30...0x39).contains(u) || (0x41...0x5A).contains(u) || (0x61...0x7A).contains(u) || "-._~".utf8.contains(u)
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
