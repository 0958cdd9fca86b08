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
    /// Changed items whose only change was values stored again redacted anew, by why
    /// (``RedactionRestore``): not counted in `changed`.
    public var restored: [String: Int] = [:]
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

    /// Fetches every page of `source`, then details and images as asked.
    /// - Throws: ``FetchError`` for the list (after recording a `FetchFailed` event); detail and
    ///   image failures are recorded and listed in the summary's `failures` instead.
    public func fetch(_ source: SourceDefinition, options: FetchOptions = FetchOptions()) async throws -> FetchSummary {
        let clock = ContinuousClock()
        let started = clock.now
        let run = UUID().uuidString.lowercased()
        let context = RunContext(source: source, run: run, options: options, gate: try await IngestGate.of(source, store: store))
        let headers: [(name: String, value: String)]
        do { headers = try source.resolvedHeaders(environment: options.environment, secrets: SourceSecrets(storePath: store.path)) } catch {
            try await recordFailure(context, url: source.url, stage: "list", error: error, attempt: 1, willRetry: false)
            throw error
        }
        // Details start downloading while the list pages; they are appended after it.
        let details = try await startDetails(source, headers: headers, context: context)
        var finished = false
        defer { if !finished { details?.abandon() } }
        var pass = ListPass(context: context, headers: headers, details: details, firstURL: firstPageURL(source))
        while case .next(let next) = try await fetchPage(&pass) {
            pass.url = next
            pass.page += 1
        }
        let runStart = try await commit(&pass)
        var summary = pass.summary
        // The list pass is in the log: the details downloaded so far may follow it.
        details?.gate.open()
        try await countChanges(&summary, source: source.name, since: runStart)
        if let details {
            try await finishDetails(details, since: runStart, detailFields: pass.detailFields, summary: &summary)
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
        let kinds: [(ChangeKind, restored: String?)] = try await store.documents(projection: "items") { reader in
            // Bookkeeping and history headers only: no document is parsed.
            let touched = try reader.summaries(collection: source).filter { $0.summary.changedSeq >= since }
            if everyVersion { return try touched.flatMap { try reader.changeKinds(collection: source, key: $0.key, since: since).map { ($0, nil) } } }
            return try touched.compactMap { t in
                try reader.changeKind(collection: source, key: t.key, at: t.summary.changedSeq).map { kind in
                    (kind, kind == .changed ? try RedactionRestore.reason(source: source, id: t.key, seq: t.summary.changedSeq, reader) : nil)
                }
            }
        }
        for (k, restored) in kinds {
            switch k {
            case .changed where restored != nil: summary.restored[restored!, default: 0] += 1
            case .added: summary.added += 1
            case .changed: summary.changed += 1
            case .removed: summary.removed += 1
            case .reappeared: summary.reappeared += 1
            }
        }
    }
}
