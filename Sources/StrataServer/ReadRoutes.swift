import Foundation
import HTTPTypes
import Hummingbird
import StrataDomain
import StrataJSON
import StrataPresentation

/// The read side as JSON, in the CLI's shapes (docs/cli.md): sources as `source list`, items as
/// `list`, an item as `show --offline`, versions as `history`, a diff as `diff`, events as the
/// lines of `export --events --format ndjson`.
extension StrataServer {
    func addReadRoutes(to router: Router<BasicRequestContext>) {
        addQuestionRoutes(to: router)
        router.get("/_strata/sources") { _, _ in
            await self.answer {
                let sources = self.useCases.sources
                return .array(try await sources.all().filter { self.allows($0.name) }.map(sources.storedForm))
            }
        }
        router.get("/_strata/sources/:name/items") { request, context in
            await self.answer {
                let name = try self.source(context)
                let q = request.uri.queryParameters
                let filter = FilterViewData(
                    wheres: q.getAll("where").map { String($0) }, search: q.get("search"), sort: q.get("sort"),
                    limit: try Self.int(q.get("limit"), "limit", min: 1), offset: try Self.int(q.get("offset"), "offset", min: 0) ?? 0,
                    asOf: q.get("as_of"))
                var query = try ItemQuery(source: name, filter: filter, naming: .queryParameters)
                if filter.asOf == nil { query.at = self.defaultPoint }
                return .array(try await self.useCases.query(query).page.items.map(JSONValue.init(item:)))
            }
        }
        router.get("/_strata/sources/:name/items/:id") { request, context in
            await self.answer {
                let name = try self.source(context)
                let id = Self.parameter(context, "id") ?? ""
                let at = try self.point(request.uri.queryParameters.get("as_of"), "as_of")
                // Offline: the server never fetches (and so never writes).
                return JSONValue(item: try await self.useCases.loadDetail(source: name, id: id, at: at, offline: true).item)
            }
        }
        router.get("/_strata/sources/:name/items/:id/history") { request, context in
            await self.answer {
                let name = try self.source(context)
                let id = Self.parameter(context, "id") ?? ""
                let at = try self.point(request.uri.queryParameters.get("as_of"), "as_of")
                return .array(try await self.useCases.history(source: name, id: id, upTo: at).versions.map(JSONValue.init(version:)))
            }
        }
        router.get("/_strata/sources/:name/diff") { request, context in
            await self.answer {
                let name = try self.source(context)
                let q = request.uri.queryParameters
                guard q.get("from") != nil else { throw PresentableError(kind: .invalidInput, message: "diff needs from=SEQ|DATE (and to=, default now)") }
                let when = try q.getAll("when").map { try ItemExpression.filter(String($0), naming: .queryParameters, input: "when") }
                let diff = try await self.useCases.diff(
                    source: name, from: try Self.point(q.get("from"), "from"), to: try self.point(q.get("to"), "to"), when: when)
                return JSONValue(collectionDiff: diff)
            }
        }
        router.get("/_strata/feeds/:file") { request, context in
            let file = context.parameters.get("file") ?? ""
            guard file.hasSuffix(".atom") else {
                return Self.error(PresentableError(kind: .notFound, message: "feeds are at /_strata/feeds/SOURCE.atom"))
            }
            do {
                let name = String(file.dropLast(".atom".count))
                guard self.allows(name) else {
                    throw PresentableError(kind: .notFound, message: "this server does not serve source \(name); see /_strata/sources")
                }
                let limit = min(try Self.int(request.uri.queryParameters.get("limit"), "limit", min: 1) ?? 50, 1_000)
                let at = try self.point(request.uri.queryParameters.get("as_of"), "as_of")
                let entries = try await self.useCases.feed(source: name, limit: limit, upTo: at)
                // Links relative to the feed's own address: right whatever name or port reached it.
                let xml = AtomFeedRenderer(baseURL: "").render(source: name, entries: entries, generatedAt: Date())
                var h = HTTPFields()
                h[.contentType] = "application/atom+xml; charset=utf-8"
                return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: xml)))
            } catch {
                return Self.error(error)
            }
        }
        router.get("/_strata/feeds/alerts/:source/:file") { request, context in
            let source = context.parameters.get("source") ?? "", file = context.parameters.get("file") ?? ""
            do {
                guard file.hasSuffix(".atom"), let alerts = self.useCases.alerts else {
                    throw PresentableError(kind: .notFound, message: "alert feeds are at /_strata/feeds/alerts/SOURCE/NAME.atom")
                }
                guard self.allows(source) else {
                    throw PresentableError(kind: .notFound, message: "this server does not serve source \(source); see /_strata/sources")
                }
                let name = String(file.dropLast(".atom".count))
                let limit = min(try Self.int(request.uri.queryParameters.get("limit"), "limit", min: 1) ?? 50, 1_000)
                let notifications = try await alerts.notifications(source: source, name: name, limit: limit)
                let xml = AtomFeedRenderer(baseURL: "").render(alert: source + "/" + name, notifications: notifications, generatedAt: Date())
                var h = HTTPFields()
                h[.contentType] = "application/atom+xml; charset=utf-8"
                return Response(status: .ok, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: xml)))
            } catch {
                return Self.error(error)
            }
        }
        router.get("/_strata/log") { request, _ in
            await self.answer {
                let q = request.uri.queryParameters
                let since = try Self.int(q.get("since"), "since", min: 0).map(UInt64.init) ?? 0
                let limit = try Self.int(q.get("limit"), "limit", min: 1) ?? 100
                let upTo = try await self.recordings.resolve(try self.point(q.get("as_of"), "as_of"))
                let query = LogQuery(type: q.get("type"), fromSeq: since + 1, toSeq: upTo, limit: min(limit, 10_000), newestFirst: false)
                let entries = try await self.useCases.replay(query)
                return .array(entries.filter { self.allowsStream($0.stream) }.map { JSONValue(entry: $0) })
            }
        }
    }

    /// The questions asked of a source's items and history: `count` and `changes`, in the CLI's
    /// shapes, with the same expressions (`where=`, `when=`).
    func addQuestionRoutes(to router: Router<BasicRequestContext>) {
        router.get("/_strata/sources/:name/count") { request, context in
            await self.answer {
                let name = try self.source(context)
                let q = request.uri.queryParameters
                let filter = FilterViewData(wheres: q.getAll("where").map { String($0) }, search: q.get("search"), asOf: q.get("as_of"))
                var query = try ItemQuery(source: name, filter: filter, naming: .queryParameters)
                if filter.asOf == nil { query.at = self.defaultPoint }
                let by = q.getAll("by").map { String($0) }
                return .array(CountRenderer(by: by).json(try await self.useCases.query.count(query, by: by).counts))
            }
        }
        router.get("/_strata/sources/:name/changes") { request, context in
            await self.answer {
                let name = try self.source(context)
                guard let changes = self.useCases.changes else { throw PresentableError(kind: .notFound, message: "this server does not serve changes") }
                let q = request.uri.queryParameters
                var filter = ReadChanges.Filter()
                filter.when = try q.getAll("when").map { try ItemExpression.filter(String($0), naming: .queryParameters, input: "when") }
                filter.fields = q.getAll("field").map { String($0) }
                if let kinds = q.get("kind") {
                    let parsed = kinds.split(separator: ",").compactMap { ChangeKind(rawValue: String($0)) }
                    guard parsed.count == kinds.split(separator: ",").count else {
                        throw PresentableError(kind: .invalidInput, message: "kind= takes added, changed, removed and reappeared, comma-separated")
                    }
                    filter.kinds = Set(parsed)
                }
                filter.limit = try Self.int(q.get("limit"), "limit", min: 1) ?? 1_000
                var from: PointInTime?
                if let text = q.get("from") { from = try Self.point(text, "from") }
                let result = try await changes(source: name, from: from, to: try self.point(q.get("to"), "to"), filter: filter)
                return .array(result.changes.map(ChangesRenderer().json))
            }
        }
    }

    /// Runs a read and answers with its JSON, or with its error's status.
    func answer(_ body: () async throws -> JSONValue) async -> Response {
        do { return Self.json(try await body()) } catch { return Self.error(error) }
    }

    /// A path parameter as the client meant it: Hummingbird hands it over still percent-encoded
    /// (an id `a b` arrives as `a%20b`).
    static func parameter(_ context: BasicRequestContext, _ name: String) -> String? {
        context.parameters.get(name).map { $0.removingPercentEncoding ?? $0 }
    }

    func source(_ context: BasicRequestContext) throws -> String {
        let name = Self.parameter(context, "name") ?? ""
        guard allows(name) else { throw PresentableError(kind: .notFound, message: "this server does not serve source \(name); see /_strata/sources") }
        return name
    }

    /// Events of sources this server does not serve stay out of its log and stream; events of no
    /// source (settings, hand-recorded documents) are shown only when every source is.
    func allowsStream(_ stream: String) -> Bool { configuration.sources.isEmpty || configuration.sources.contains(stream) }

    static func int(_ text: String?, _ name: String, min: Int) throws -> Int? {
        guard let text else { return nil }
        guard let v = Int(text), v >= min else { throw PresentableError(kind: .invalidInput, message: "\(name)=\(text) must be a whole number ≥ \(min)") }
        return v
    }

    /// The point a read without `as_of` answers at: the server's `--as-of`, else now.
    var defaultPoint: PointInTime { configuration.asOf ?? .now }

    /// A read's point: its parameter, else the server's.
    func point(_ text: String?, _ name: String) throws -> PointInTime {
        guard let text else { return defaultPoint }
        return try Self.point(text, name)
    }

    static func point(_ text: String?, _ name: String) throws -> PointInTime {
        guard let text else { return .now }
        guard let p = PointInTime(text: text) else {
            throw PresentableError(kind: .invalidInput, message: "\(name)=\(text) is neither a seq nor an ISO 8601 date like 2026-03-01T09:00:00Z")
        }
        return p
    }
}
