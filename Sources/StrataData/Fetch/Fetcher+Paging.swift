import EventStore
import Foundation
import Logging
import Synchronization

// Validators of stored pages, read-ahead answers, and the URLs of a list's pages.

extension Fetcher {
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
        /// The source's redaction when the body was stored (``Redactor/fingerprint``; nil: none).
        var redaction: String?
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
        if case .string(let r)? = s.document.value(atPath: "redaction") { v.redaction = r }
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
                // Kept only as the source's redaction leaves it; a body it cannot read is dropped.
                let body = try? context.gate.list(r.body, items: context.source.items, url: url)
                if let body { return NewEvent(type: DataEvents.readAheadDiscarded, stream: context.source.name, metadata: meta, payload: body) }
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
            "HTTP \(status) for the list: the API refused the credentials; check the source's auth header and that its variables are set"
        case 404, 410: "HTTP \(status) for the list: no such resource; check the source's URL"
        default: "HTTP \(status) for the list; check the URL and any auth header"
        }
    }

    func prefetchChain(
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
            chain.map { request($0.url, headers: headers + conditionalHeaders($0.validators, context: context), context: context) },
            concurrency: context.options.concurrency)
        defer { transfers.cancel() }
        var answered: [String: ReadAhead] = [:]
        while let group = await transfers.next() {
            for c in group { answered[chain[c.index].url] = ReadAhead(result: c.result, validators: chain[c.index].validators) }
        }
        return answered
    }

    /// The conditional headers for a stored body, none when it was stored under another
    /// redaction than the source's now: a 304 would keep a body the source no longer wants kept
    /// (a value stored before it was named), so the API is asked for the whole body again.
    func conditionalHeaders(_ v: Validators?, context: RunContext) -> [(name: String, value: String)] {
        guard v?.redaction == context.gate.fingerprint else { return [] }
        var out: [(String, String)] = []
        if let e = v?.etag { out.append(("If-None-Match", e)) }
        if let m = v?.lastModified { out.append(("If-Modified-Since", m)) }
        return out
    }

    func common(_ context: RunContext) -> [(key: String, value: String)] {
        [("source", context.source.name), ("run", context.run)]
    }

    func milliseconds(_ d: Duration) -> String { String(Int(seconds(d) * 1000)) }

    func firstPageURL(_ source: SourceDefinition) -> String {
        let limit = source.limitQuery
        if let p = source.pageParam, let size = source.pageSize {
            return withQuery(source.url, [(p, "1"), (source.sizeParam, String(size))])
        }
        if let offset = source.offsetParam { return withQuery(source.url, [(offset, "0")] + limit) }
        return limit.isEmpty ? source.url : withQuery(source.url, limit)
    }

    func nextPageURL(
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

    func withQuery(_ url: String, _ items: [(String, String)]) -> String {
        guard var c = URLComponents(string: url) else { return url }
        var q = (c.queryItems ?? []).filter { item in !items.contains { $0.0 == item.name } }
        q += items.map { URLQueryItem(name: $0.0, value: $0.1) }
        c.queryItems = q
        return c.string ?? url
    }
}
