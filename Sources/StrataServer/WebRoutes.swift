import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import StrataDomain
import StrataJSON
import StrataPresentation
import StrataWeb
import Synchronization

/// The web UI under `/_strata/ui/`: server-rendered pages over the same use cases as the JSON
/// read side (each page links its JSON twin), a stylesheet and a script. Read-only: no GET
/// changes anything. Every answer carries a Content-Security-Policy allowing this origin's
/// stylesheet, script and images only; a request whose `Host` is not the address the server is
/// bound to (or `localhost`) is refused, so a page elsewhere cannot reach a loopback server by
/// rebinding a name of its own to 127.0.0.1.
extension StrataServer {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    func addWebRoutes(to router: Router<BasicRequestContext>) {
        let pages: WebPages
        do { pages = try WebPages() } catch {
            configuration.logger.error("the web UI's templates do not parse: \(error)")
            return
        }
        router.get("/_strata/ui/") { request, _ in
            await self.page(request, pages, title: "Sources", json: "/_strata/sources") { chrome in
                var rows: [WebPages.SourceRow] = []
                for source in try await self.useCases.catalog.sources() where self.allows(source.name) {
                    let q = ItemQuery(source: source.name, at: try self.uiPoint(request))
                    rows.append(.init(source: source, items: try await self.useCases.query.count(q, by: []).counts.first?.count ?? 0))
                }
                return pages.sources(rows, chrome: chrome)
            }
        }
        router.get("/_strata/ui/assets/strata.css") { _, _ in Self.asset(WebAssets.css, "text/css; charset=utf-8") }
        router.get("/_strata/ui/assets/strata.js") { _, _ in Self.asset(WebAssets.js, "text/javascript; charset=utf-8") }
        router.get("/_strata/ui/sources/:name") { request, context in
            let name = Self.parameter(context, "name") ?? ""
            let q = FormQuery(request)
            return await self.page(request, pages, title: name, json: "/_strata/sources/\(Links.segment(name))/items") { chrome in
                let name = try self.source(context)
                let wheres = q.getAll("where").map { String($0) }.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                let web = WebPages.ItemsRequest(
                    search: q.nonEmpty("search"), wheres: wheres, sort: q.nonEmpty("sort"),
                    after: q.get("after"), asOf: try self.uiAsOf(request), limit: 50, facets: q.getAll("facet"))
                let point = try self.uiPoint(request)
                let source = try await self.useCases.catalog.source(named: name)
                var page: ItemPage?
                var problem: String?
                do {
                    let filter = FilterViewData(wheres: wheres, search: web.search, sort: web.sort, limit: web.limit, asOf: nil)
                    var query = try ItemQuery(source: name, filter: filter, naming: .queryParameters)
                    query.at = point
                    query.after = web.after
                    page = try await self.useCases.query(query).page
                } catch {
                    // A filter that does not parse is said on the page, above what the source holds.
                    let e = PresentableError(error)
                    guard e.kind == .invalidInput else { throw error }
                    problem = FrontEndWording.http.message(e)
                    var query = ItemQuery(source: name, at: point)
                    query.limit = web.limit
                    page = try await self.useCases.query(query).page
                }
                // Facets asked for (`facet=PATH`, an indexed field): a field of many values
                // (prices) would read one item per value, so none is counted unasked.
                var facets: [WebPages.Facet] = []
                for path in q.getAll("facet") where source.indexPaths.contains(path) {
                    var query = ItemQuery(source: name, at: point)
                    query.limit = nil
                    let counts = try await self.useCases.query.count(query, by: [path]).counts
                    facets.append(
                        .init(path: path, counts: counts.prefix(12).map { c in (c.values.first.map { $0?.displayText ?? "null" } ?? "", c.count) }))
                }
                let points = try await self.observationPoints(name)
                let current = try await self.useCases.replay.resolve(point)
                return pages.items(
                    source: source, page: page, request: web, error: problem, facets: facets, points: points, current: current, chrome: chrome)
            }
        }
        router.get("/_strata/ui/sources/:name/items/:id") { request, context in
            let name = Self.parameter(context, "name") ?? "", id = Self.parameter(context, "id") ?? ""
            let q = FormQuery(request)
            return await self.page(
                request, pages, title: id, json: "/_strata/sources/\(Links.segment(name))/items/\(Links.segment(id))/history"
            ) { chrome in
                let name = try self.source(context)
                let point = try self.uiPoint(request)
                let item = try await self.useCases.loadDetail(source: name, id: id, at: point, offline: true).item
                var ends: (UInt64, UInt64)?
                if let f = q.get("from"), let t = q.get("to") {
                    guard let a = UInt64(f), let b = UInt64(t) else {
                        throw PresentableError(kind: .invalidInput, message: "from= and to= name versions by their seq")
                    }
                    ends = (min(a, b), max(a, b))
                }
                let before = try Self.int(q.get("before"), "before", min: 1).map(UInt64.init)
                // Only the versions shown are read in full; a chart needs every one.
                let page = HistoryPage(before: before, limit: WebPages.versionsPerPage, at: ends.map { [$0.0, $0.1] } ?? [])
                var chart: (String, [ItemVersion])?
                let history: ItemHistoryPage
                if let path = q.get("chart") {
                    let all = try await self.useCases.history(source: name, id: id, upTo: point).versions
                    history = ItemHistoryPage(all, page: page)
                    chart = (path, all)
                } else {
                    history = try await self.useCases.history.page(source: name, id: id, upTo: point, page: page)
                }
                let compare = ends.map { a, b in
                    (a, b, (history.version(at: a)?.document ?? .null).diff(to: history.version(at: b)?.document ?? .null).map(Change.init(patch:)))
                }
                return pages.item(
                    item: item, history: history, compare: compare, chart: chart, asOf: try self.uiAsOf(request), chrome: chrome)
            }
        }
        router.get("/_strata/ui/sources/:name/items/:id/image") { request, context in
            do {
                let name = try self.source(context), id = Self.parameter(context, "id") ?? ""
                let (item, bytes) = try await self.useCases.loadDetail.image(source: name, id: id, at: try self.uiPoint(request))
                guard let bytes, let image = item.image else { throw PresentableError(kind: .notFound, message: "\(name)/\(id) has no stored image") }
                // The recorded type, never sniffed; an SVG is only ever an <img> (whose scripts
                // never run) or a download, never a document of this origin.
                var h = HTTPFields()
                h[.contentType] = image.contentType
                h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
                h[.contentSecurityPolicy] = "default-src 'none'; sandbox"
                if image.contentType.lowercased().contains("svg") { h[.contentDisposition] = "attachment" }
                return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
            } catch {
                return Self.error(error)
            }
        }
        router.get("/_strata/ui/sources/:name/changes") { request, context in
            let name = Self.parameter(context, "name") ?? ""
            let q = FormQuery(request)
            return await self.page(request, pages, title: "Changes in \(name)", json: "/_strata/sources/\(Links.segment(name))/changes") { chrome in
                let name = try self.source(context)
                guard let changes = self.useCases.changes else { throw PresentableError(kind: .notFound, message: "this server does not serve changes") }
                let kinds = q.getAll("kind").flatMap { $0.split(separator: ",") }.compactMap { ChangeKind(rawValue: String($0)) }
                let web = WebPages.ChangesRequest(
                    from: q.nonEmpty("from"), to: q.nonEmpty("to"),
                    when: q.get("when").flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 },
                    kinds: kinds.isEmpty ? Set(ChangeKind.allCases) : Set(kinds), limit: 200)
                var found: [ItemChange] = []
                var problem: String?
                do {
                    var filter = ReadChanges.Filter()
                    filter.when = try web.when.map { [try ItemExpression.filter($0, naming: .queryParameters, input: "when")] } ?? []
                    filter.kinds = web.kinds
                    filter.limit = web.limit
                    let from = try web.from.map { try Self.point($0, "from") }
                    found = try await changes(source: name, from: from, to: try Self.point(web.to, "to"), filter: filter).changes
                } catch {
                    let e = PresentableError(error)
                    guard e.kind == .invalidInput else { throw error }
                    problem = FrontEndWording.http.message(e)
                }
                let head = try await self.useCases.replay.resolve(.now)
                return pages.changes(source: name, changes: found, request: web, head: head, error: problem, chrome: chrome)
            }
        }
        router.get("/_strata/ui/sources/:name/schema") { request, context in
            let name = Self.parameter(context, "name") ?? ""
            return await self.page(request, pages, title: "Schema of \(name)", json: "/_strata/sources/\(Links.segment(name))/items") { chrome in
                let name = try self.source(context)
                guard let schema = self.useCases.schema else { throw PresentableError(kind: .notFound, message: "this server does not serve schemas") }
                let point = try self.uiPoint(request)
                return pages.schema(
                    try await schema(source: name, at: point), drift: try await schema.history(source: name, upTo: point).reversed(),
                    asOf: try self.uiAsOf(request), chrome: chrome)
            }
        }
        router.get("/_strata/ui/sources/:name/exchanges") { request, context in
            let name = Self.parameter(context, "name") ?? ""
            let q = FormQuery(request)
            return await self.page(request, pages, title: "Exchanges of \(name)", json: "/_strata/log?type=ExchangeRecorded") { chrome in
                let name = try self.source(context)
                let upTo = try await self.useCases.replay.resolve(try self.uiPoint(request))
                let before = try Self.int(q.get("before"), "before", min: 1).map(UInt64.init) ?? (upTo == .max ? .max : upTo + 1)
                let entries = try await self.useCases.replay(
                    LogQuery(stream: name, type: "ExchangeRecorded", fromSeq: 1, toSeq: min(upTo, before - 1), limit: 100, newestFirst: true))
                var view: WebPages.ExchangeView?
                if let seq = try Self.int(q.get("seq"), "seq", min: 1).map(UInt64.init) {
                    view = try await self.exchange(name, seq, compare: try Self.int(q.get("compare"), "compare", min: 1).map(UInt64.init))
                }
                var older: String?
                if entries.count == 100, let last = entries.last {
                    older = "/_strata/ui/sources/\(Links.segment(name))/exchanges?before=\(last.seq)"
                }
                return pages.exchanges(source: name, entries: entries, exchange: view, older: older, chrome: chrome)
            }
        }
        for format in ["har", "warc"] {
            router.get("/_strata/ui/sources/:name/exchanges.\(format)") { request, context in
                do {
                    let name = try self.source(context)
                    guard let export = self.useCases.exportTraffic else {
                        throw PresentableError(kind: .notFound, message: "this server does not export traffic")
                    }
                    // Written to a scratch file by the export, read back, removed.
                    let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-ui-\(UUID().uuidString).\(format)").path
                    defer { try? FileManager.default.removeItem(atPath: path) }
                    _ = try await export(name, format: format == "har" ? .har : .warc, to: path, at: try self.uiPoint(request))
                    let data = try Data(contentsOf: URL(fileURLWithPath: path))
                    var h = HTTPFields()
                    h[.contentType] = format == "har" ? "application/json" : "application/warc"
                    h[.contentDisposition] = "attachment; filename=\"\(Links.segment(name)).\(format)\""
                    h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
                    return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
                } catch {
                    return Self.error(error)
                }
            }
        }
        router.get("/_strata/ui/alerts") { request, _ in
            let q = FormQuery(request)
            return await self.page(request, pages, title: "Alerts", json: "/_strata/sources") { chrome in
                guard let alerts = self.useCases.alerts else { throw PresentableError(kind: .notFound, message: "this server does not serve alerts") }
                let all = try await alerts.list().filter { self.allows($0.alert.source) }
                var selected: (String, String, [AlertNotification])?
                if let source = q.get("source"), let name = q.get("name"), self.allows(source) {
                    selected = (name, source, try await alerts.notifications(source: source, name: name, limit: 100))
                }
                return pages.alerts(all, selected: selected, chrome: chrome)
            }
        }
        router.get("/_strata/ui/log") { request, _ in
            let q = FormQuery(request)
            return await self.page(request, pages, title: "Event log", json: "/_strata/log") { chrome in
                let upTo = try await self.useCases.replay.resolve(try self.uiPoint(request))
                let before = try Self.int(q.get("before"), "before", min: 1).map(UInt64.init) ?? (upTo == .max ? .max : upTo + 1)
                let type = q.nonEmpty("type"), stream = q.nonEmpty("stream")
                let query = LogQuery(stream: stream, type: type, fromSeq: 1, toSeq: min(upTo, before - 1), limit: 100, newestFirst: true)
                let entries = try await self.useCases.replay(query).filter { self.allowsStream($0.stream) }
                var event: LogEntry?
                if let s = try Self.int(q.get("seq"), "seq", min: 1).map(UInt64.init) {
                    event = try await self.useCases.replay(LogQuery(fromSeq: s, toSeq: s, limit: 1)).first.flatMap { self.allowsStream($0.stream) ? $0 : nil }
                    if event == nil { throw PresentableError(kind: .notFound, message: "no event \(s) on this server") }
                }
                var older: String?
                if entries.count == 100, let last = entries.last {
                    var items = [("before", String(last.seq))]
                    if let type { items.append(("type", type)) }
                    if let stream { items.append(("stream", stream)) }
                    older = Links.query("/_strata/ui/log", items)
                }
                return pages.log(entries: entries, type: type, stream: stream, event: event, older: older, chrome: chrome)
            }
        }
    }

    /// One recorded exchange of `source` with its body, the previous exchange of the same method
    /// and URL (the last 2,000 exchanges before it are looked through), and its body's field
    /// changes against `compare` when asked.
    func exchange(_ source: String, _ seq: UInt64, compare: UInt64?) async throws -> WebPages.ExchangeView {
        guard let export = useCases.export else { throw PresentableError(kind: .notFound, message: "this server does not show exchanges") }
        func find(_ s: UInt64) async throws -> LogEntry {
            guard let e = try await useCases.replay(LogQuery(fromSeq: s, toSeq: s, limit: 1)).first, e.stream == source,
                e.type == "ExchangeRecorded" || e.type == "ExchangeFailed"
            else { throw PresentableError(kind: .notFound, message: "no exchange \(s) in \(source)") }
            return e
        }
        let entry = try await find(seq)
        let body = try await export.payload(of: entry)
        func key(_ e: LogEntry) -> [String?] { ["method", "url", "requestBody"].map { k in e.metadata.first { $0.path == k }?.value } }
        let earlier = try await useCases.replay(
            LogQuery(stream: source, type: "ExchangeRecorded", fromSeq: 1, toSeq: seq - 1, limit: 2_000, newestFirst: true))
        let previous = earlier.first { key($0) == key(entry) }?.seq
        var changes: (UInt64, [Change])?
        if let compare {
            let other = try await export.payload(of: try await find(compare))
            let a = other.flatMap { try? JSONValue(parsing: $0) } ?? .null, b = body.flatMap { try? JSONValue(parsing: $0) } ?? .null
            changes = (compare, a.diff(to: b).map(Change.init(patch:)))
        }
        return WebPages.ExchangeView(entry: entry, body: body, previous: previous, compare: changes)
    }

    /// The seqs where a source's list was observed whole, oldest first: the slider's stops.
    func observationPoints(_ source: String) async throws -> [WebPages.Point] {
        // The log only grows (a rewrite by forget or retention moves the head too): the points
        // read at a head stand until it moves.
        let head = try await useCases.replay.resolve(.now)
        if let cached = observationCache.withLock({ $0[source] }), cached.head == head { return cached.points }
        var out: [WebPages.Point] = []
        var from: UInt64 = 1
        while true {
            let batch = try await useCases.replay(LogQuery(stream: source, type: "FetchCompleted", fromSeq: from, limit: 1_000, newestFirst: false))
            out += batch.map { .init(seq: $0.seq, at: $0.recordedAt) }
            guard batch.count == 1_000, let last = batch.last else { break }
            from = last.seq + 1
        }
        // Many passes: every n-th, the last kept, so the slider stays a few hundred stops.
        if out.count > 500 {
            let step = (out.count + 499) / 500
            out = out.enumerated().filter { $0.offset % step == 0 || $0.offset == out.count - 1 }.map(\.element)
        }
        observationCache.withLock { $0[source] = (head, out) }
        return out
    }

    /// The point a page shows: `as_of`, else a `date` (the slider's date field, read as UTC),
    /// else the server's.
    func uiPoint(_ request: Request) throws -> PointInTime {
        guard let text = try uiAsOf(request) else { return defaultPoint }
        return try Self.point(text, "as_of")
    }

    /// The point named by the request, as text: `as_of`, or a `date` field's value.
    func uiAsOf(_ request: Request) throws -> String? {
        let q = FormQuery(request)
        if let a = q.get("as_of"), !a.isEmpty { return a }
        if let d = q.get("date"), !d.isEmpty { return d.count == 16 ? d + ":00Z" : d.hasSuffix("Z") ? d : d + "Z" }
        return nil
    }

    /// Answers a page: renders `body`, and words any error as a page
    /// with the status its kind means.
    func page(
        _ request: Request, _ pages: WebPages, title: String, json: String, _ body: (WebPages.Chrome) async throws -> String
    ) async -> Response {
        var asOf: String?
        var nowLink = request.uri.path
        do {
            asOf = try uiAsOf(request)
            let kept = FormQuery(request).pairs.filter { $0.key != "as_of" && $0.key != "date" }
            nowLink = Links.query(nowLink, kept.map { ($0.key, $0.value) })
            let chrome = WebPages.Chrome(title: title, asOf: asOf, nowLink: nowLink, json: json + (asOf.map { "?as_of=" + Links.segment($0) } ?? ""))
            return Self.html(.ok, try await body(chrome))
        } catch {
            let e = PresentableError(error)
            let (status, _) = Self.status(of: e.kind)
            let chrome = WebPages.Chrome(title: "Error", asOf: asOf, nowLink: nowLink, json: json)
            return Self.html(status, pages.error(heading: status.reasonPhrase, message: FrontEndWording.http.message(e), chrome: chrome))
        }
    }

    /// Refuses every `/_strata/ui/` request whose `Host` is not this server (``hostIsOurs(_:)``):
    /// pages, images and downloads alike.
    struct HostCheck: RouterMiddleware {
        let server: StrataServer
        func handle(_ request: Request, context: BasicRequestContext, next: (Request, BasicRequestContext) async throws -> Response) async throws
            -> Response
        {
            guard !request.uri.path.hasPrefix("/_strata/ui") || server.hostIsOurs(request) else {
                return StrataServer.html(
                    .misdirectedRequest, "this server answers only requests addressed to \(server.configuration.host) or localhost\n")
            }
            return try await next(request, context)
        }
    }

    /// Whether the request names this server: its bound address, or localhost (any port).
    func hostIsOurs(_ request: Request) -> Bool {
        guard let authority = request.head.authority else { return false }
        var host = authority
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") {
            host = String(host[host.index(after: host.startIndex)..<end])
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        host = host.lowercased()
        return host == "localhost" || host == configuration.host.lowercased() || (configuration.host == "0.0.0.0" || configuration.host == "::")
    }

    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        var h = HTTPFields()
        h[.contentType] = status == .misdirectedRequest ? "text/plain; charset=utf-8" : "text/html; charset=utf-8"
        h[.contentSecurityPolicy] = contentSecurityPolicy
        h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        h[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        h[.cacheControl] = "no-store"
        return Response(status: status, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func asset(_ text: String, _ type: String) -> Response {
        var h = HTTPFields()
        h[.contentType] = type
        h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        h[.cacheControl] = "max-age=300"
        return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

}

/// A page's query as a browser's form sends it (`application/x-www-form-urlencoded`): `+` is a
/// space, `%2B` a plus (Hummingbird's query parameters keep `+`, which would turn
/// `make = "Kia"` typed in a form into `make+=+"Kia"`).
struct FormQuery {
    let pairs: [(key: String, value: String)]

    init(_ request: Request) {
        let raw = request.uri.query ?? ""
        pairs = raw.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return (decode(kv[0]), kv.count > 1 ? decode(kv[1]) : "")
        }
    }

    func get(_ key: String) -> String? { pairs.first { $0.key == key }?.value }
    /// The value, nil when the field was sent empty (a form sends every field).
    func nonEmpty(_ key: String) -> String? { get(key).flatMap { $0.isEmpty ? nil : $0 } }
    func getAll(_ key: String) -> [String] { pairs.filter { $0.key == key }.map(\.value) }
}
