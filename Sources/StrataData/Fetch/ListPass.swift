import EventStore
import Foundation
import StrataJSON

/// One pass over a source's list pages, page by page: what it has gathered so far. The pass's
/// events are appended in one transaction at its end (``Fetcher/commit(_:)``); details start
/// downloading while it pages.
struct ListPass {
    let context: Fetcher.RunContext
    let headers: [(name: String, value: String)]
    let extraction: ItemExtraction
    let details: Fetcher.DetailPass?
    var summary: FetchSummary
    var events: [NewEvent] = []
    /// The detail-URL field of every item of the pass, read from the pages already parsed, so
    /// choosing the details to fetch parses no stored item (later pages win, as they do in the
    /// items projection).
    var detailFields: [String: JSONValue] = [:]
    /// The page being fetched, and its number.
    var url: String
    var page = 1
    var visited = Set<String>()
    var passURLs: [String] = []
    /// Whether the pass reached the last page.
    var complete = false
    /// Seconds the list's pages stay fresh (`Cache-Control: max-age` less `Age`), the least of
    /// the pass's pages; nil when a page gave none (or said `no-cache`/`no-store`).
    var freshFor: Int??
    /// Conditional requests already answered for pages an unchanged list is known to lead to
    /// (``Fetcher/prefetchChain(from:page:source:headers:context:limit:)``), with the validators
    /// they were sent with.
    var prefetched: [String: Fetcher.ReadAhead] = [:]

    init(context: Fetcher.RunContext, headers: [(name: String, value: String)], details: Fetcher.DetailPass?, firstURL: String) {
        self.context = context
        self.headers = headers
        self.details = details
        extraction = ItemExtraction(context.source)
        summary = FetchSummary(source: context.source.name, run: context.run)
        url = firstURL
    }

    var source: SourceDefinition { context.source }
    var options: FetchOptions { context.options }

    /// The next page, or the end of the pass: complete (the last page was reached) or not (the
    /// page limit stopped it).
    enum Step {
        case next(String)
        case end
    }

    /// Ends the pass, or goes on to `next` unless the page limit is reached.
    mutating func step(to next: String?) -> Step {
        guard let next else {
            complete = true
            return .end
        }
        if let limit = options.pageLimit, page >= limit { return .end }
        return .next(next)
    }

    mutating func countPage() {
        summary.pages += 1
        options.progress?(FetchProgress(source: source.name, stage: .list, done: summary.pages, total: nil))
    }
}

extension Fetcher {
    /// Fetches, records and parses the pass's current page; says where the pass goes next.
    func fetchPage(_ pass: inout ListPass) async throws -> ListPass.Step {
        let (source, options, context, url) = (pass.source, pass.options, pass.context, pass.url)
        guard pass.visited.insert(url).inserted else {
            let e = FetchError(
                code: .redirects,
                message: source.cursorPath.map { "the cursor at \($0) repeats one already followed (a loop)" }
                    ?? "the next-page links loop back to a page already fetched", url: url, subject: source.cursorPath.map { _ in .field("cursorPath") })
            try await failPass(pass, url: url, error: e)
        }
        pass.passURLs.append(url)
        let (cached, response) = try await request(page: url, &pass)
        let fresh = Self.freshness(response.headers)
        pass.freshFor = .some(pass.freshFor.map { was in was.flatMap { w in fresh.map { min(w, $0) } } } ?? fresh)
        var meta = pageMetadata(response, cached: cached, page: pass.page, url: url, pass: pass)
        // A 304 carries no Link header: page on with the one stored beside the body.
        var responseHeaders = response.headers
        if response.status == 304, responseHeaders["link"] == nil, let link = cached?.link { responseHeaders["link"] = link }
        if let link = responseHeaders["link"] { meta.append(("link", link)) }
        // A 304 without an ETag still records the one it confirmed.
        if response.status == 304, response.headers["etag"] == nil, let etag = cached?.etag { meta.append(("etag", etag)) }
        let paging = Self.pagingFingerprint(source, page: pass.page)
        let needsItems = options.details && source.detailURL == nil && source.detailURLField != nil
        if response.status == 304, let cached, let ref = PayloadReference(hashHex: cached.sha256, size: cached.size),
            !needsItems, cached.paging == paging, let known = cached.next
        {
            // Unchanged, and where it leads was worked out when it was fetched with this same
            // paging: the stored page is neither read nor parsed.
            meta += [("next", known), ("paging", paging)]
            pass.events.append(NewEvent(type: DataEvents.pageNotModified, stream: source.name, metadata: meta, payloadReference: ref))
            pass.summary.pagesNotModified += 1
            pass.countPage()
            let step = pass.step(to: known.isEmpty ? nil : known)
            if case .next(let next) = step, pass.prefetched.isEmpty, options.concurrency > 1 {
                pass.prefetched = try await prefetchChain(
                    from: next, page: pass.page + 1, source: source, headers: pass.headers, context: context,
                    limit: options.pageLimit.map { $0 - pass.page } ?? 64)
            }
            return step
        }
        let body = try await pageBody(response, cached: cached, meta: meta, url: url, &pass)
        let (document, items): (JSONValue, [(key: String, item: JSONValue)])
        pass.summary.pagesParsed += 1
        do { (document, items) = try pass.extraction.items(in: body, url: url) } catch {
            try await failPass(pass, url: url, error: error, status: response.status)
        }
        if options.details, source.detailURL == nil, let field = source.detailURLField {
            for (key, item) in items { pass.detailFields[key] = item.value(atPath: field) ?? .null }
        }
        if let details = pass.details { offer(items, to: details) }
        pass.countPage()
        let next = nextPageURL(source, current: url, page: pass.page, document: document, items: items, headers: responseHeaders)
        // Where this page leads, for an unchanged re-fetch to page on without parsing it.
        pass.events[pass.events.count - 1].metadata += [("next", next ?? ""), ("paging", paging)]
        return pass.step(to: next)
    }

    /// The page's answer: the one read ahead for it, if any (a 304, a changed page, or a failed
    /// first attempt that is recorded and retried here; never asked twice), else a conditional
    /// request with its stored validators.
    private func request(page url: String, _ pass: inout ListPass) async throws -> (Validators?, HTTPResponse) {
        do {
            if let ahead = pass.prefetched.removeValue(forKey: url) {
                let response = try await answer(
                    ahead, url: url, headers: pass.headers + conditionalHeaders(ahead.validators, context: pass.context), context: pass.context)
                return (ahead.validators, response)
            }
            let cached = try await validators(for: url)
            return (cached, try await get(url, headers: pass.headers + conditionalHeaders(cached, context: pass.context), stage: "list", context: pass.context))
        } catch {
            // The pass ends here: what the read-ahead got for later pages is recorded too.
            try await recordUnused(pass.prefetched, context: pass.context)
            throw error
        }
    }

    private func pageMetadata(_ response: HTTPResponse, cached: Validators?, page: Int, url: String, pass: ListPass) -> [(key: String, value: String)] {
        var meta =
            common(pass.context) + [
                ("page", String(page)), ("url", url), ("status", String(response.status)),
                ("durationMs", milliseconds(response.duration))
            ] + pass.extraction.metadata
        if let etag = response.headers["etag"] { meta.append(("etag", etag)) }
        if let lm = response.headers["last-modified"] { meta.append(("lastModified", lm)) }
        if let fingerprint = pass.context.gate.fingerprint { meta.append(("redaction", fingerprint)) }
        return meta
    }

    /// The page's body, its event added to the pass: the stored body a 304 confirmed, or a 2xx
    /// response's. Any other status ends the pass.
    private func pageBody(
        _ response: HTTPResponse, cached: Validators?, meta: [(key: String, value: String)], url: String, _ pass: inout ListPass
    ) async throws -> [UInt8] {
        let source = pass.source
        if response.status == 304, let cached, let ref = PayloadReference(hashHex: cached.sha256, size: cached.size),
            let stored = try await store.body(sha256: cached.sha256)
        {
            pass.events.append(NewEvent(type: DataEvents.pageNotModified, stream: source.name, metadata: meta, payloadReference: ref))
            pass.summary.pagesNotModified += 1
            return stored
        }
        guard (200..<300).contains(response.status) else {
            let e = FetchError(code: .http, message: Self.listStatusMessage(response.status), url: url, status: response.status)
            try await failPass(pass, url: url, error: e, status: response.status)
        }
        var body = response.body
        do { body = try pass.context.gate.list(body, items: source.items, url: url) } catch {
            try await failPass(pass, url: url, error: error, status: response.status)
        }
        pass.events.append(NewEvent(type: DataEvents.pageFetched, stream: source.name, metadata: meta, payload: body))
        pass.summary.bytes += response.body.count
        return body
    }

    /// Records why the pass ends at `url` (and what the read-ahead got for later pages), then
    /// throws `error`: nothing of the pass is appended.
    private func failPass(_ pass: ListPass, url: String, error: any Error, status: Int? = nil) async throws -> Never {
        try await recordFailure(pass.context, url: url, stage: "list", error: error, attempt: 1, willRetry: false, status: status)
        try await recordUnused(pass.prefetched, context: pass.context)
        throw error
    }

    /// Seconds a response stays fresh by its `Cache-Control` (RFC 9111: `max-age` less `Age`);
    /// nil without `max-age`, or with `no-cache` or `no-store`.
    static func freshness(_ headers: [String: String]) -> Int? {
        guard let cc = headers["cache-control"]?.lowercased() else { return nil }
        let directives = cc.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if directives.contains(where: { $0 == "no-cache" || $0 == "no-store" || $0.hasPrefix("no-cache=") }) { return nil }
        guard
            let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }).flatMap({
                Int($0.dropFirst(8).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            })
        else { return nil }
        let age = headers["age"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        return max(0, maxAge - max(0, age))
    }

    /// Appends the pass's events in one transaction and returns the first one's seq. A complete
    /// pass whose every page answered 304, over items still as that pass made them, is one
    /// compact fact instead of a page event per page: nothing to mark or sweep.
    func commit(_ pass: inout ListPass) async throws -> UInt64 {
        let source = pass.source
        let fresh: [(key: String, value: String)] = if case .some(.some(let s)) = pass.freshFor { [("maxAge", String(s))] } else { [] }
        if pass.complete && pass.summary.pagesNotModified == pass.summary.pages, try await itemsFollowPass(of: source.name, urls: pass.passURLs) {
            pass.events = [
                NewEvent(
                    type: DataEvents.listNotModified, stream: source.name,
                    metadata: common(pass.context) + [("pages", String(pass.summary.pages))] + fresh)
            ]
        } else {
            pass.events.append(
                NewEvent(
                    type: DataEvents.fetchCompleted, stream: source.name,
                    metadata: common(pass.context) + [("pages", String(pass.events.count)), ("complete", String(pass.complete))] + fresh))
        }
        // Read-ahead answers the pass did not reach (it stopped, or a changed page led elsewhere)
        // are recorded after the pass's own events, so every response received is in the log.
        pass.events += unusedReadAhead(pass.prefetched, context: pass.context)
        let outcomes = try await store.append(pass.events)
        pass.summary.complete = pass.complete
        return outcomes.first!.seq
    }
}
