import EventStore
import Foundation
import Logging
import Synchronization

// The per-item passes of a fetch: details and images. A fetch's details pass starts with its
// list, so the detail requests overlap the paging instead of waiting for it.

extension Fetcher {
    // MARK: Details and images

    /// One item's request of a details or images pass, with the validators it is sent with (a
    /// conditional request when the detail is stored).
    struct Job: Sendable {
        var key: String
        var url: String
        var cached: Validators?

        init(key: String, url: String, cached: Validators? = nil) {
            self.key = key; self.url = url; self.cached = cached
        }
    }

    /// The jobs of one pass and their transfers, index for index. An open queue grows
    /// (``add(_:)``) until it is closed.
    final class JobQueue: Sendable {
        private struct State {
            var jobs: [Job]
            var closed: Bool
        }
        let transfers: HTTPTransfers
        private let state: Mutex<State>
        private let makeRequest: @Sendable (Job) -> HTTPRequest

        init(_ jobs: [Job], open: Bool, client: any HTTPClient, concurrency: Int, request: @escaping @Sendable (Job) -> HTTPRequest) {
            state = Mutex(State(jobs: jobs, closed: !open))
            self.makeRequest = request
            transfers = client.transfers(jobs.map(request), concurrency: concurrency)
            if open { transfers.keepOpen() }
        }

        subscript(index: Int) -> Job { state.withLock { $0.jobs[index] } }

        /// How many jobs the pass has; nil while more may be added.
        var total: Int? { state.withLock { $0.closed ? $0.jobs.count : nil } }

        func add(_ more: [Job]) {
            guard !more.isEmpty else { return }
            // Under the lock: the transfers' indices are the jobs', in the same order.
            state.withLock { s in
                precondition(!s.closed, "a job added to a closed queue")
                s.jobs += more
                transfers.add(more.map(makeRequest))
            }
        }

        func close() {
            state.withLock { $0.closed = true }
            transfers.close()
        }
    }

    /// Opens once the list pass of a fetch has committed, or fails if it never will: what the
    /// details pass waits for before it appends anything.
    final class CommitGate: Sendable {
        struct Abandoned: Error {}
        private struct State {
            /// nil while waiting, then whether it opened.
            var opened: Bool?
            var waiters: [CheckedContinuation<Void, any Error>] = []
        }
        private let state = Mutex(State())

        func wait() async throws {
            if let opened = state.withLock({ $0.opened }) {
                if opened { return }
                throw Abandoned()
            }
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                // Resumed outside the lock: a continuation's resume may run its task at once.
                let settled: Bool? = state.withLock { s in
                    if let opened = s.opened { return opened }
                    s.waiters.append(c)
                    return nil
                }
                if let settled { settled ? c.resume() : c.resume(throwing: Abandoned()) }
            }
        }

        func open() { settle(true) }
        func fail() { settle(false) }

        private func settle(_ open: Bool) {
            let waiting: [CheckedContinuation<Void, any Error>] = state.withLock { s in
                guard s.opened == nil else { return [] }
                s.opened = open
                defer { s.waiters = [] }
                return s.waiters
            }
            for c in waiting { open ? c.resume() : c.resume(throwing: Abandoned()) }
        }
    }

    /// The details pass of one fetch, started before its list (``startDetails(_:headers:context:)``).
    ///
    /// As each list page is parsed, the details the pass will ask for whatever the list turns
    /// out to hold start downloading while the next pages are asked for: an item with no stored
    /// detail, and with ``DetailPolicy/all`` one due for revalidation. Whether an item changed is
    /// only known once the pass has committed; its detail is added then
    /// (``finishDetails(_:since:detailFields:summary:)``). The downloaded details wait behind the
    /// ``CommitGate``: the log holds the list pass first, and a list that fails appends none.
    final class DetailPass: Sendable {
        let source: SourceDefinition
        let queue: JobQueue
        let gate = CommitGate()
        let revalidate: Bool
        let maxAge: Double?
        /// With a max age: the last seq at or before now minus the max age.
        let fresh: UInt64
        private struct State {
            var task: Task<FetchSummary, any Error>?
            /// The URL of the job started for each key.
            var started: [String: String] = [:]
            var lookups: [Task<Void, any Error>] = []
        }
        private let state = Mutex(State())
        /// The pass's own task, once started.
        var task: Task<FetchSummary, any Error>? {
            get { state.withLock { $0.task } }
            set { state.withLock { $0.task = newValue } }
        }

        init(source: SourceDefinition, queue: JobQueue, revalidate: Bool, maxAge: Double?, fresh: UInt64) {
            self.source = source; self.queue = queue; self.revalidate = revalidate; self.maxAge = maxAge; self.fresh = fresh
        }

        /// Whether a detail summarized as `detail` is asked for whether or not its item changed.
        func certain(_ detail: DocumentSummary?) -> Bool {
            guard let detail else { return true }
            return revalidate && (maxAge == nil || detail.lastSeenSeq <= fresh)
        }

        func lookup(_ task: Task<Void, any Error>) {
            state.withLock { $0.lookups.append(task) }
        }

        /// Waits for every page's lookup; throws the first one's error.
        func lookupsDone() async throws {
            for t in allLookups() { try await t.value }
        }

        private func allLookups() -> [Task<Void, any Error>] { state.withLock { $0.lookups } }

        /// Starts the jobs for keys not started yet.
        func start(_ jobs: [Job]) {
            // Under the lock: two pages naming one key start one job.
            state.withLock { s in
                let new = jobs.filter { s.started[$0.key] == nil }
                for j in new { s.started[j.key] = j.url }
                queue.add(new)
            }
        }

        func wasStarted(_ job: Job) -> Bool { state.withLock { $0.started[job.key] == job.url } }

        /// The list pass failed or the fetch ended early: nothing more is asked for or appended.
        func abandon() {
            gate.fail()
            queue.transfers.cancel()
            task?.cancel()
            for t in allLookups() { t.cancel() }
        }
    }

    /// Starts the details pass of a fetch before its list; nil when the fetch asks for no details.
    func startDetails(_ source: SourceDefinition, headers: [(name: String, value: String)], context: RunContext) async throws -> DetailPass? {
        let options = context.options
        guard options.details, source.detailURL != nil || source.detailURLField != nil else { return nil }
        // With `all`, a stored detail is asked for again unless it was seen after `fresh` (the
        // last seq at or before now minus --detail-max-age).
        let fresh: UInt64 =
            if options.detailPolicy == .all, let age = options.detailMaxAge {
                try await store.seq(asOf: Timestamp(Date(timeIntervalSinceNow: -age)))
            } else { 0 }
        let queue = JobQueue([], open: true, client: client, concurrency: options.concurrency) {
            self.request($0.url, headers: headers + self.conditionalHeaders($0.cached, context: context), context: context)
        }
        let pass = DetailPass(source: source, queue: queue, revalidate: options.detailPolicy == .all, maxAge: options.detailMaxAge, fresh: fresh)
        pass.task = Task {
            var summary = FetchSummary(source: source.name, run: context.run)
            try await self.runJobs(queue, stage: .details, context: context, summary: &summary, gate: pass.gate, self.detailOutcome(source, context: context))
            return summary
        }
        return pass
    }

    /// Starts the details of a parsed page's items that the pass asks for in any case (see
    /// ``DetailPass``). The store is read beside the paging, not before the next page.
    ///
    /// The page's first items go first, by themselves: enough of them to fill every slot twice
    /// start as soon as their URLs are resolved and looked up, and the rest of the page follows
    /// while they download. Working out a whole page first (a URL resolved per item, a store
    /// lookup per item: milliseconds for a page of hundreds) held back the first request by as
    /// much, on every fetch of a list.
    func offer(_ items: [(key: String, item: JSONValue)], to pass: DetailPass) {
        guard !items.isEmpty else { return }
        let source = pass.source
        let field = source.detailURL == nil ? source.detailURLField : nil
        let store = self.store
        let first = min(items.count, 2 * pass.queue.transfers.concurrency)
        pass.lookup(
            Task {
                let base = BaseURL(source.url)
                for part in [items[..<first], items[first...]] where !part.isEmpty {
                    let candidates = part.compactMap { entry in
                        self.detailJob(source, key: entry.key, field: field.map { entry.item.value(atPath: $0) ?? .null }, base: base)
                    }
                    guard !candidates.isEmpty else { continue }
                    let jobs: [Job] = try await store.read { txn in
                        let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
                        let cache = DocumentReader(transaction: txn, tables: try store.tables(of: "http-cache"))
                        return try candidates.compactMap { job -> Job? in
                            guard pass.certain(try details.summary(collection: source.name, key: job.key)) else { return nil }
                            var job = job
                            job.cached = try Self.validators(job.url, cache)
                            return job
                        }
                    }
                    pass.start(jobs)
                }
            })
    }

    /// Completes the details pass once the list pass has committed (at `runStart`) and its gate
    /// was opened: the rest of the pass's details are added (new, changed or reappeared items,
    /// and present items the list did not reach that still lack a detail or are due), and the
    /// pass runs to its end.
    /// - Parameter detailFields: the detail-URL field of the pass's items, by key; an item not
    ///   in it (one a partial pass did not reach) has its field read from the store.
    func finishDetails(_ pass: DetailPass, since runStart: UInt64, detailFields: [String: JSONValue], summary: inout FetchSummary) async throws {
        let source = pass.source
        let name = source.name
        // Decided from the records' bookkeeping; a stored document is parsed only for a target's
        // detail URL that the pass did not read.
        let field = source.detailURL == nil ? source.detailURLField : nil
        try await pass.lookupsDone()
        let targets: [(key: String, field: JSONValue?)] = try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
            return try items.summaries(collection: name).compactMap { key, s in
                guard !s.removed else { return nil }
                let certain = pass.certain(try details.summary(collection: name, key: key))
                guard s.changedSeq >= runStart || certain else { return nil }
                guard let field else { return (key, nil) }
                if let known = detailFields[key] { return (key, known) }
                return (key, try items.state(collection: name, key: key)?.document.value(atPath: field))
            }
        }
        let base = BaseURL(source.url)
        let jobs = targets.compactMap { detailJob(source, key: $0.key, field: $0.field, base: base) }.filter { !pass.wasStarted($0) }
        // Every added job's validators in one snapshot, not a read per request.
        let known = try await validators(for: jobs.map(\.url))
        pass.queue.add(jobs.map { Job(key: $0.key, url: $0.url, cached: known[$0.url]) })
        pass.queue.close()
        let task = pass.task!
        let details = try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
        summary.details += details.details
        summary.detailsNotModified += details.detailsNotModified
        summary.bytes += details.bytes
        summary.failures += details.failures
    }

    /// Downloads one item's detail into the store (a conditional request when one is stored).
    /// - Throws: ``FetchError`` when the source has no detail URL or the item is unknown and the
    ///   URL needs its fields; a failed request is recorded and listed in `failures` instead.
    public func fetchDetail(_ source: SourceDefinition, key: String, options: FetchOptions = FetchOptions()) async throws -> FetchSummary {
        let clock = ContinuousClock()
        let started = clock.now
        let run = UUID().uuidString.lowercased()
        var summary = FetchSummary(source: source.name, run: run)
        let context = RunContext(source: source, run: run, options: options, gate: try await IngestGate.of(source, store: store))
        guard source.detailURL != nil || source.detailURLField != nil else {
            throw FetchError(
                code: .source, message: "source \(source.name) has no detail URL", url: source.url, subject: .field("detailURL"))
        }
        let name = source.name
        let item = try await store.documents(projection: "items") { try $0.state(collection: name, key: key)?.document }
        guard let job = detailJob(source, key: key, field: source.detailURLField.flatMap { item?.value(atPath: $0) }) else {
            throw FetchError(
                code: .source, message: "no stored item \(key) in \(name) to read its detail URL from", url: source.url, subject: .notFetchedYet)
        }
        let headers: [(name: String, value: String)]
        do { headers = try source.resolvedHeaders(environment: options.environment, secrets: SourceSecrets(storePath: store.path)) } catch {
            // The request this stopped is the detail's: name its URL, not the list's.
            var e = error
            e.url = job.url
            try await recordFailure(context, url: job.url, stage: "detail", error: e, attempt: 1, willRetry: false)
            throw e
        }
        let queue = JobQueue(
            [Job(key: job.key, url: job.url, cached: try await validators(for: job.url))], open: false,
            client: client, concurrency: 1
        ) { self.request($0.url, headers: headers + self.conditionalHeaders($0.cached, context: context), context: context) }
        try await runJobs(queue, stage: .details, context: context, summary: &summary, detailOutcome(source, context: context))
        summary.seconds = seconds(clock.now - started)
        logger.debug(
            "detail fetched",
            metadata: [
                "source": "\(source.name)", "key": "\(key)", "run": "\(run)",
                "stored": "\(summary.details)", "notModified": "\(summary.detailsNotModified)",
                "failed": "\(summary.failures.count)"
            ])
        return summary
    }

    /// The detail URL of an item: the template with its id, or the value of its detail field
    /// (`field`) resolved against the list URL (`base`: the source's URL, parsed once per batch).
    func detailJob(_ source: SourceDefinition, key: String, field: JSONValue?, base: BaseURL? = nil) -> Job? {
        if let template = source.detailURL {
            let encoded = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? key
            return Job(key: key, url: template.replacingOccurrences(of: "{id}", with: encoded))
        }
        guard case .string(let raw)? = field, let resolved = (base ?? BaseURL(source.url)).resolve(raw) else { return nil }
        return Job(key: key, url: resolved)
    }

    /// One detail response as an event: a 304 references the stored body, a 2xx must be JSON.
    func detailOutcome(_ source: SourceDefinition, context: RunContext) -> @Sendable (Job, HTTPResponse) throws -> DetailOutcome {
        { job, r in
            let cached = job.cached
            var meta = self.common(context) + [("key", job.key), ("url", job.url), ("status", String(r.status)), ("durationMs", self.milliseconds(r.duration))]
            if let etag = r.headers["etag"] { meta.append(("etag", etag)) }
            if let lm = r.headers["last-modified"] { meta.append(("lastModified", lm)) }
            if let fingerprint = context.gate.fingerprint { meta.append(("redaction", fingerprint)) }
            if r.status == 304, let cached, let ref = PayloadReference(hashHex: cached.sha256, size: cached.size) {
                return .notModified(NewEvent(type: DataEvents.detailNotModified, stream: source.name, metadata: meta, payloadReference: ref))
            }
            guard (200..<300).contains(r.status) else {
                throw FetchError(code: .http, message: "HTTP \(r.status) for the detail of \(job.key)", url: job.url, status: r.status)
            }
            let body = try context.gate.document(r.body, url: job.url)
            // Checking the body and canonicalizing it are one pass; the store reuses the result.
            var event = NewEvent(type: DataEvents.detailFetched, stream: source.name, metadata: meta, payload: body)
            event.canonicalPayload = try ItemDetailDto.canonicalize(id: job.key, body: body, url: job.url)
            return .fetched(event, r.body.count)
        }
    }

    enum DetailOutcome: Sendable {
        case fetched(NewEvent, Int)
        case notModified(NewEvent)
        case failed(FetchError)
    }

    func fetchImages(_ source: SourceDefinition, headers: [(name: String, value: String)], context: RunContext, summary: inout FetchSummary) async throws {
        guard let path = source.image else { return }
        let name = source.name
        let listURL = BaseURL(source.url)
        let jobs: [Job] = try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            let details = DocumentReader(transaction: txn, tables: try store.tables(of: "details"))
            let images = DocumentReader(transaction: txn, tables: try store.tables(of: "images"))
            var out: [Job] = []
            for (key, item) in try items.summaries(collection: name) where !item.removed {
                // An image stored after the item and its detail last changed is still current:
                // skip it without parsing either document.
                if let image = try images.summary(collection: name, key: key), !image.removed, image.changedSeq >= item.changedSeq {
                    let detail = try details.summary(collection: name, key: key)
                    if detail == nil || image.changedSeq >= detail!.changedSeq { continue }
                }
                guard let s = try items.state(collection: name, key: key) else { continue }
                var raw: String?
                if case .string(let v)? = s.document.value(atPath: path) {
                    raw = v
                } else if let d = try details.state(collection: name, key: key), case .string(let v)? = d.document.value(atPath: path) {
                    raw = v
                }
                guard let raw, let url = listURL.resolve(raw) else { continue }
                if let have = try images.state(collection: name, key: key), have.document.value(atPath: "url") == .string(url) { continue }
                out.append(Job(key: key, url: url))
            }
            return out
        }
        let queue = JobQueue(jobs, open: false, client: client, concurrency: context.options.concurrency) {
            self.request($0.url, headers: headers, context: context)
        }
        try await runJobs(queue, stage: .images, context: context, summary: &summary) { job, r in
            guard (200..<300).contains(r.status) else {
                throw FetchError(code: .http, message: "HTTP \(r.status) for the image of \(job.key)", url: job.url, status: r.status)
            }
            var meta = self.common(context) + [("key", job.key), ("url", job.url), ("status", String(r.status))]
            if let t = r.headers["content-type"] { meta.append(("contentType", t)) }
            if let etag = r.headers["etag"] { meta.append(("etag", etag)) }
            return .fetched(NewEvent(type: DataEvents.imageFetched, stream: source.name, metadata: meta, payload: r.body), r.body.count)
        }
    }

    /// Runs per-item requests, at most `concurrency` in flight, turning each response into an
    /// event with `outcome` and appending the events as they complete (so memory stays bounded
    /// and a killed run keeps what it finished); records failures, counts into `summary` and
    /// reports progress.
    ///
    /// The client keeps the requests in flight by itself and hands over completions in groups
    /// (``HTTPTransfers``), so the slots never wait for this task. Every failed attempt is
    /// recorded; a retryable one is queued again after its back-off and runs in the next free
    /// slot, so retries never exceed `concurrency` either. Appends are group commits: completions
    /// gather while an append is in flight, and go in the next one once it has finished and the
    /// oldest of them has waited ``groupCommitDelay`` (or all at the end); at ``groupCommitEvents``
    /// events or ``groupCommitBytes`` of bodies a batch is handed over regardless. Fast transfers
    /// so make few large commits (one fsync each; every commit also rewrites the pages its
    /// random-keyed rows land on, so small ones write several pages per detail), and slow ones
    /// small, timely commits: a killed run loses at most the last moments of its completions. The
    /// moment comes without a completion too (the transfers are nudged when an append finishes
    /// and when the oldest waiting completion is due), so one slow transfer left in flight does
    /// not hold back those that finished.
    ///
    /// With a `gate` (a details pass that starts while the list is still paging), nothing is
    /// appended, failed attempts included, until the gate opens: the list pass commits first. If
    /// it never does, the gate fails and so does this run, appending nothing.
    func runJobs(
        _ queue: JobQueue, stage: FetchProgress.Stage, context: RunContext, summary: inout FetchSummary, gate: CommitGate? = nil,
        _ outcome: @escaping @Sendable (Job, HTTPResponse) throws -> DetailOutcome
    ) async throws {
        let progress = context.options.progress
        let stageName = stage == .details ? "detail" : "image"
        let transfers = queue.transfers
        var attempts: [Int: Int] = [:]
        var backoffs: [Task<Void, Never>] = []
        defer {
            transfers.cancel()
            for b in backoffs { b.cancel() }
        }
        var commits = GroupCommit(store: store, transfers: transfers, after: gate)
        defer { commits.cancelTimer() }
        var done = 0
        func handle(_ outcome: DetailOutcome) async throws {
            switch outcome {
            case .fetched(let e, let bytes):
                commits.add(e, bytes: bytes)
                summary.bytes += bytes
                if stage == .details { summary.details += 1 } else { summary.images += 1 }
            case .notModified(let e):
                commits.add(e, bytes: 0)
                summary.detailsNotModified += 1
            case .failed(let e):
                if !e.recorded {
                    try await gate?.wait()
                    try await recordFailure(context, url: e.url, stage: stageName, error: e, attempt: 1, willRetry: false, status: e.status)
                }
                summary.failures.append("\(e)")
            }
            if commits.isFull {
                // Before the list has committed, hold the downloads back (the client stops at its
                // backlog) rather than queueing batch after batch behind the gate.
                try await gate?.wait()
                commits.flush()
            }
            done += 1
            // The total is known once the list has committed and every detail it needs was added.
            if let total = queue.total { progress?(FetchProgress(source: context.source.name, stage: stage, done: done, total: total)) }
        }
        do {
            for await completions in transfers {
                var responses: [(Job, HTTPResponse)] = []
                for c in completions {
                    let job = queue[c.index]
                    guard var failure = retryableFailure(of: c, url: job.url) else {
                        if case .success(let r) = c.result { responses.append((job, r)) }
                        continue
                    }
                    let attempt = attempts[c.index, default: 1]
                    try await gate?.wait()
                    guard try await recordAttempt(&failure, attempt: attempt, url: job.url, stage: stageName, context: context) else {
                        try await handle(.failed(failure))
                        continue
                    }
                    attempts[c.index] = attempt + 1
                    backoffs.append(retry(c.index, of: transfers, after: backoff(failure, attempt: attempt, options: context.options)))
                }
                for o in await outcomes(responses, outcome) { try await handle(o) }
                commits.flushWhenDue()
            }
        } catch {
            // Whatever was already handed to the writer still commits (a killed run keeps it too).
            await commits.settle()
            throw error
        }
        try await commits.finish()
        // A cancelled run keeps what finished (committed above) and says it stopped early.
        try Task.checkCancellation()
    }

    /// Why a completion is to be retried or recorded as failed; nil for a response to use.
    private func retryableFailure(of c: HTTPCompletion, url: String) -> FetchError? {
        switch c.result {
        case .success(let r): retryableFailure(r, url: url)
        case .failure(let e): e
        }
    }

    /// Holds request `index` of `transfers` open and runs it again after `delay` seconds (or
    /// gives it up when the wait is cancelled).
    private func retry(_ index: Int, of transfers: HTTPTransfers, after delay: Double) -> Task<Void, Never> {
        transfers.retryLater(index)
        return Task { [sleeper] in
            do {
                try await sleeper.sleep(seconds: delay)
                transfers.resubmit(index)
            } catch {
                transfers.abandonRetry(index)
            }
        }
    }

    /// Turns responses into outcomes: in this task, or spread over the cores when a group of
    /// completions carries enough bytes to be worth the hand-offs.
    func outcomes(_ responses: [(Job, HTTPResponse)], _ make: @escaping @Sendable (Job, HTTPResponse) throws -> DetailOutcome) async -> [DetailOutcome] {
        @Sendable func one(_ job: Job, _ r: HTTPResponse) -> DetailOutcome {
            do { return try make(job, r) } catch let error as FetchError { return .failed(error) } catch {
                return .failed(FetchError(code: .other, message: "\(error)", url: job.url))
            }
        }
        let parts = min(responses.count, Self.cores)
        guard parts > 1, responses.reduce(0, { $0 + $1.1.body.count }) >= 64 << 10 else { return responses.map(one) }
        return await withTaskGroup(of: (Int, [DetailOutcome]).self) { group in
            let size = (responses.count + parts - 1) / parts
            for part in 0..<parts {
                let slice = Array(responses[min(responses.count, part * size)..<min(responses.count, (part + 1) * size)])
                group.addTask { (part, slice.map(one)) }
            }
            var out = [[DetailOutcome]](repeating: [], count: parts)
            for await (part, o) in group { out[part] = o }
            return out.flatMap { $0 }
        }
    }

    /// Read once: Foundation reads the cgroup's CPU quota and cpuset files on every call, and
    /// this is asked for every group of completions.
    private static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// How long a completion may wait for the next group commit once no append is in flight.
    static let groupCommitDelay = Duration.milliseconds(50)
    /// A group commit's most events, and its most bytes of bodies (images are large).
    static let groupCommitEvents = 256
    static let groupCommitBytes = 8 << 20

    /// Whether no append of ``runJobs`` is in flight.
    final class AppendIdle: Sendable {
        private let state = Mutex(true)
        var value: Bool {
            get { state.withLock { $0 } }
            set { state.withLock { $0 = newValue } }
        }
    }

}

/// The events of a detail or image pass waiting for their append. They are appended in groups —
/// at most ``Fetcher/groupCommitEvents`` events or ``Fetcher/groupCommitBytes`` of bodies, or
/// ``Fetcher/groupCommitDelay`` after the oldest once no append is in flight — and the appends
/// are pipelined: one group commits (fsync) while the next downloads, at most one append in
/// flight, so groups still commit in order. Used by one task (``Fetcher/runJobs``).
struct GroupCommit {
    let store: EventStore
    let transfers: HTTPTransfers
    private var batch: [NewEvent] = []
    private var bytes = 0
    private var since = ContinuousClock.now
    private var pending: Task<Void, any Error>?
    private let idle = Fetcher.AppendIdle()
    /// Wakes the pass's loop when the oldest waiting event is due, if nothing else does.
    private var timer: (due: ContinuousClock.Instant, task: Task<Void, Never>)?

    /// With a `gate`, nothing is appended before it opens (the list pass is in the log first).
    init(store: EventStore, transfers: HTTPTransfers, after gate: Fetcher.CommitGate?) {
        self.store = store
        self.transfers = transfers
        guard let gate else { return }
        let idle = self.idle
        idle.value = false
        pending = Task {
            defer { idle.value = true; transfers.nudge() }
            try await gate.wait()
        }
    }

    mutating func add(_ e: NewEvent, bytes: Int) {
        if batch.isEmpty { since = .now }
        batch.append(e)
        self.bytes += bytes
    }

    /// A group is due by its size.
    var isFull: Bool { batch.count >= Fetcher.groupCommitEvents || bytes >= Fetcher.groupCommitBytes }

    /// Hands what waits to the writer, after the append before it.
    mutating func flush() {
        guard !batch.isEmpty else { return }
        let (events, previous, store, idle, transfers) = (batch, pending, store, idle, transfers)
        batch.removeAll(keepingCapacity: true)
        bytes = 0
        idle.value = false
        pending = Task {
            defer { idle.value = true; transfers.nudge() }
            try await previous?.value
            _ = try await store.append(events)
        }
    }

    /// Flushes when the oldest waiting event is due and no append is in flight, else sets the
    /// timer that wakes the loop then.
    mutating func flushWhenDue() {
        // Once every request has started, what is left is at most the transfers in flight:
        // waiting for more would only leave a larger last commit after the last response.
        if !batch.isEmpty && idle.value && (ContinuousClock.now - since >= Fetcher.groupCommitDelay || transfers.allStarted) { flush() }
        guard !batch.isEmpty else {
            cancelTimer()
            timer = nil
            return
        }
        let due = since + Fetcher.groupCommitDelay
        guard timer?.due != due else { return }
        timer?.task.cancel()
        timer = (
            due,
            Task { [transfers] in
                guard (try? await Task.sleep(until: due, clock: .continuous)) != nil else { return }
                transfers.nudge()
            }
        )
    }

    func cancelTimer() { timer?.task.cancel() }

    /// Appends what waits and waits for every append.
    mutating func finish() async throws {
        flush()
        try await pending?.value
    }

    /// Waits for the appends already handed to the writer (a failing pass keeps what they hold).
    func settle() async { try? await pending?.value }
}
