public import EventStore
import Foundation
import StrataJSON

/// How to mirror one JSON collection API: where the list is, how to find the items and their ids
/// in it, how to page, and where each item's detail and image are. Stored as the payload of
/// `SourceDefined`/`SourceChanged` events.
public struct SourceDefinition: Codable, Sendable, Hashable {
    public var name: String
    /// The list endpoint (http, https or file).
    public var url: String
    /// Dotted path to the items (an array, or an object whose keys are ids); nil: the body itself.
    public var items: String?
    /// Dotted paths whose values, joined with ":", form the item id; `["@key"]` for object maps.
    public var id: [String]
    public var title: String?
    public var subtitle: [String]
    public var image: String?
    /// A detail URL template with `{id}`, e.g. `https://api.example/cars/{id}`.
    public var detailURL: String?
    /// A field of the item holding its detail URL (may be relative to the list URL).
    public var detailURLField: String?
    /// Dotted path to the next page's URL in the body.
    public var next: String?
    /// Page-number paging: the page parameter's name; sizes go in `sizeParam`.
    public var pageParam: String?
    public var sizeParam: String
    public var pageSize: Int?
    /// Cursor paging: the dotted path of the next cursor in the body, and the parameter it is
    /// sent back in (`meta.next_cursor`, `cursor`).
    public var cursorPath: String?
    public var cursorParam: String?
    /// Offset/limit paging: the offset parameter (`offset`); pages of `pageSize`, ended by a short
    /// or empty page, or by the total at `totalPath`.
    public var offsetParam: String?
    public var totalPath: String?
    /// The parameter that carries `pageSize` for cursor, offset and after-id paging (`limit`).
    public var limitParam: String?
    /// After-id paging: the parameter given the last item's id (`starting_after`), and the
    /// dotted path of a has-more flag (`has_more`); an empty page ends it too.
    public var afterParam: String?
    public var hasMorePath: String?
    /// Fields to index for filtering.
    public var index: [String]
    /// Header templates, `Name: value`; `$VAR` and `${VAR}` are read from the environment when
    /// fetching and never stored resolved.
    public var headers: [String]
    /// The write side (all optional; a source without them is read-only).
    /// Where new items are POSTed.
    public var createURL: String?
    /// An item's URL for updates, a template with `{id}`; sent with `updateMethod`.
    public var updateURL: String?
    /// `PATCH` (default) or `PUT` (the whole document).
    public var updateMethod: String?
    /// The body of a PATCH: `json-patch` (RFC 6902, default) or `merge-patch` (RFC 7396).
    public var patchFormat: String?
    /// An item's URL for deletes, a template with `{id}`.
    public var deleteURL: String?
    /// Dotted path of the field naming an item's owner: filled with the local user on create,
    /// matched by `list --mine`.
    public var ownerField: String?
    /// When `strata watch` fetches the source by itself, and what it fetches then (nil: only
    /// when asked).
    public var schedule: FetchSchedule?
    /// Fields that change on every poll (timestamps, request ids, counters): a change to these
    /// alone makes no new item version (the stored bodies keep them). Nil or empty: none.
    public var ignore: [String]?
    /// A recorded source: exchanges recorded by `strata proxy` or imported from HAR and WARC
    /// files, with no list to fetch (`url` is the upstream, or empty for imports).
    public var recorded: Bool?
    /// Dotted paths, from each list item and from a detail (from a recorded JSON response's
    /// root), whose values are replaced by keyed placeholders before anything is stored
    /// (``Redactor``). Nil or empty: none.
    public var redact: [String]?
    /// Header names whose values recorded traffic keeps only as placeholders, beside the
    /// credentials always masked (``CredentialMask``). Nil or empty: none.
    public var redactHeaders: [String]?
    /// Retention: bodies and item versions older than this many seconds (`keep`), or than the
    /// newest `keepVersions` complete passes, are dropped at `strata compact` (``SourceRetention``).
    /// Nil: everything is kept.
    public var keep: Double?
    public var keepVersions: Int?

    public init(
        name: String, url: String, items: String? = nil, id: [String] = ["id"], title: String? = nil, subtitle: [String] = [],
        image: String? = nil, detailURL: String? = nil, detailURLField: String? = nil, next: String? = nil,
        pageParam: String? = nil, sizeParam: String = "size", pageSize: Int? = nil, index: [String] = [], headers: [String] = [],
        cursorPath: String? = nil, cursorParam: String? = nil, offsetParam: String? = nil, totalPath: String? = nil,
        limitParam: String? = nil, afterParam: String? = nil, hasMorePath: String? = nil
    ) {
        self.cursorPath = cursorPath; self.cursorParam = cursorParam; self.offsetParam = offsetParam; self.totalPath = totalPath
        self.limitParam = limitParam; self.afterParam = afterParam; self.hasMorePath = hasMorePath
        self.name = name; self.url = url; self.items = items; self.id = id; self.title = title; self.subtitle = subtitle
        self.image = image; self.detailURL = detailURL; self.detailURLField = detailURLField; self.next = next
        self.pageParam = pageParam; self.sizeParam = sizeParam; self.pageSize = pageSize; self.index = index; self.headers = headers
    }

    /// Whether the source takes writes of `kind`.
    public func accepts(_ kind: WriteKind) -> Bool {
        switch kind {
        case .create: createURL != nil
        case .patch: updateURL != nil
        case .delete: deleteURL != nil
        }
    }

    /// The URL of a write's request (an item's id percent-encoded into the template).
    public func writeURL(_ kind: WriteKind, id: String) -> String? {
        let escaped = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? id
        switch kind {
        case .create: return createURL
        case .patch: return updateURL?.replacingOccurrences(of: "{id}", with: escaped)
        case .delete: return deleteURL?.replacingOccurrences(of: "{id}", with: escaped)
        }
    }

    /// Checks the definition; the error names the flag at fault and why.
    public func validate() throws(FetchError) {
        func bad(_ flag: String, _ why: String) -> FetchError {
            FetchError(code: .source, message: "source \(name): \(flag) \(why)", url: url)
        }
        guard !name.isEmpty, name.utf8.count <= 64,
            name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" || $0 == "." })
        else {
            throw bad("NAME", "must be 1–64 letters, digits, '-', '_' or '.'")
        }
        for p in redact ?? [] where !Self.isPath(p) { throw bad("--redact", "'\(p)' is not a dotted path like email or contact.phone") }
        for h in redactHeaders ?? [] where !HeaderName.isValid(h) {
            throw bad("--redact-header", "'\(h)' is not a header name like X-Session")
        }
        if keep != nil && keepVersions != nil { throw bad("--keep", "and --keep-versions are two retentions; pick one") }
        if let k = keep, !(60...(100 * 366 * 86_400)).contains(k) { throw bad("--keep", "must be a duration from 1m to 100 years, like 30d") }
        if let n = keepVersions, n < 1 { throw bad("--keep-versions", "must be at least 1") }
        if recorded == true && url.isEmpty { return }
        guard let u = URL(string: url), let scheme = u.scheme?.lowercased(), ["http", "https", "file"].contains(scheme),
            scheme == "file" || u.host != nil
        else {
            throw bad("--url", "must be an absolute http, https or file URL, e.g. https://api.example.com/items")
        }
        for (flag, path) in [("--items", items), ("--title", title), ("--image", image), ("--detail-url-field", detailURLField), ("--next", next)] {
            if let path, !Self.isPath(path) { throw bad(flag, "'\(path)' is not a dotted path like results or data.items") }
        }
        for p in subtitle + index where !Self.isPath(p) { throw bad("--subtitle/--index", "'\(p)' is not a dotted path") }
        for p in ignore ?? [] where !Self.isPath(p) { throw bad("--ignore", "'\(p)' is not a dotted path like updated_at or meta.request_id") }
        guard !id.isEmpty else { throw bad("--id", "needs at least one path") }
        for p in id where !(p == "@key" || Self.isPath(p)) { throw bad("--id", "'\(p)' is not a dotted path or @key") }
        if id.contains("@key") && id.count > 1 { throw bad("--id", "@key cannot be combined with other paths") }
        if detailURL != nil && detailURLField != nil { throw bad("--detail-url", "and --detail-url-field cannot both be given") }
        if let problem = schedule?.problem { throw FetchError(code: .source, message: "source \(name): \(problem)", url: url) }
        if let t = detailURL {
            guard t.contains("{id}") else { throw bad("--detail-url", "must contain {id}, e.g. https://api.example.com/items/{id}") }
            let detailScheme = URL(string: t.replacingOccurrences(of: "{id}", with: "1"))?.scheme?.lowercased()
            guard let detailScheme, ["http", "https", "file"].contains(detailScheme) else { throw bad("--detail-url", "must be an absolute http(s) URL") }
            guard detailScheme != "file" || scheme == "file" else { throw bad("--detail-url", "cannot be a file URL for an http(s) source") }
        }
        for (flag, path) in [("--cursor-path", cursorPath), ("--total-path", totalPath), ("--has-more-path", hasMorePath)] {
            if let path, !Self.isPath(path) { throw bad(flag, "'\(path)' is not a dotted path like meta.next_cursor") }
        }
        for (flag, param) in [
            ("--cursor-param", cursorParam), ("--offset-param", offsetParam), ("--limit-param", limitParam),
            ("--after-param", afterParam), ("--page-param", pageParam), ("--size-param", sizeParam)
        ] {
            if let param, param.isEmpty || param.contains(where: { "&=?# ".contains($0) }) {
                throw bad(flag, "'\(param)' is not a query parameter name")
            }
        }
        let styles = [
            ("--next", next != nil), ("--page-param", pageParam != nil), ("--cursor-path", cursorPath != nil || cursorParam != nil),
            ("--offset-param", offsetParam != nil), ("--after-param", afterParam != nil)
        ].filter(\.1).map(\.0)
        if styles.count > 1 { throw bad(styles[1], "and \(styles[0]) are two paging styles; pick one") }
        if (cursorPath == nil) != (cursorParam == nil) {
            throw bad(
                cursorPath == nil ? "--cursor-param" : "--cursor-path",
                "needs \(cursorPath == nil ? "--cursor-path (where the next cursor is in the body)" : "--cursor-param (the parameter it is sent back in)")")
        }
        if pageParam != nil && pageSize == nil { throw bad("--page-param", "needs --page-size") }
        if offsetParam != nil && pageSize == nil { throw bad("--offset-param", "needs --page-size (the limit sent with each page)") }
        if totalPath != nil && offsetParam == nil { throw bad("--total-path", "goes with --offset-param") }
        if hasMorePath != nil && afterParam == nil { throw bad("--has-more-path", "goes with --after-param") }
        if limitParam != nil && pageSize == nil { throw bad("--limit-param", "needs --page-size (its value)") }
        if limitParam != nil && pageParam != nil { throw bad("--limit-param", "is for cursor, offset and after-id paging; page numbers use --size-param") }
        if pageSize != nil && styles.isEmpty {
            throw bad(
                "--page-size",
                "needs a paging style: --page-param, --cursor-path, --offset-param or --after-param; an API paged by Link headers (like GitHub's) is followed without one and takes its page size in --url, e.g. --url 'https://api.github.com/repos/OWNER/REPO/issues?per_page=100'"
            )
        }
        if let n = pageSize, !(1...10_000).contains(n) { throw bad("--page-size", "must be 1–10000") }
        for (flag, template, needsId) in [("--create-url", createURL, false), ("--update-url", updateURL, true), ("--delete-url", deleteURL, true)] {
            guard let template else { continue }
            let scheme = URL(string: template.replacingOccurrences(of: "{id}", with: "1"))?.scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else { throw bad(flag, "must be an absolute http(s) URL") }
            if needsId && !template.contains("{id}") { throw bad(flag, "must contain {id}, e.g. https://api.example.com/items/{id}") }
        }
        if let m = updateMethod, !["PATCH", "PUT"].contains(m) { throw bad("--update-method", "must be PATCH or PUT") }
        if let f = patchFormat, !["json-patch", "merge-patch"].contains(f) { throw bad("--patch-format", "must be json-patch or merge-patch") }
        if (updateMethod != nil || patchFormat != nil) && updateURL == nil { throw bad("--update-method/--patch-format", "need --update-url") }
        if let o = ownerField, !Self.isPath(o) { throw bad("--owner-field", "'\(o)' is not a dotted path") }
        for h in headers {
            guard let colon = h.firstIndex(of: ":"), !h[..<colon].trimmingCharacters(in: .whitespaces).isEmpty else {
                throw bad("--header", "'\(h)' must look like 'Name: value'")
            }
        }
        let literal = literalSecretHeaders
        if !literal.isEmpty { throw FetchError(code: .source, message: Self.literalSecretMessage(literal), url: url) }
    }

    /// The limit parameter and its value, for cursor, offset and after-id paging (`limit`
    /// unless `limitParam` names another); empty when no page size is set or pages are numbered.
    var limitQuery: [(String, String)] {
        guard let size = pageSize, pageParam == nil else { return [] }
        return [(limitParam ?? "limit", String(size))]
    }

    static func isPath(_ p: String) -> Bool {
        !p.isEmpty && !p.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty)
    }

    /// Resolves header templates: `$VAR` and `${VAR}` from `environment`, `${file:PATH}` from a
    /// file's text (its trailing newline dropped), `${secret:NAME}` from the literals kept outside
    /// the log (``SourceSecrets``). Throws naming the variable or file, never a value.
    public func resolvedHeaders(environment: [String: String], secrets: SourceSecrets? = nil) throws(FetchError) -> [(name: String, value: String)] {
        var out: [(String, String)] = []
        for h in headers {
            // Definitions are checked when defined, but one may come from an older version or a
            // team log: a header without a name is an error here too, not a trap.
            guard let (name, written) = Self.split(header: h) else {
                throw FetchError(
                    code: .source, message: "header '\(h.prefix(40))' must look like 'Name: value'; fix it with `strata source change \(self.name) --header`",
                    url: url)
            }
            var value = written
            var resolved = ""
            while let dollar = value.firstIndex(of: "$") {
                resolved += value[..<dollar]
                var rest = value[value.index(after: dollar)...]
                var variable = ""
                if rest.first == "{", let close = rest.firstIndex(of: "}") {
                    variable = String(rest[rest.index(after: rest.startIndex)..<close])
                    rest = rest[rest.index(after: close)...]
                } else {
                    variable = String(rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
                    rest = rest.dropFirst(variable.count)
                }
                guard !variable.isEmpty else { resolved += "$"; value = String(rest); continue }
                if variable.hasPrefix("file:") {
                    let file = String(variable.dropFirst(5))
                    guard let d = FileManager.default.contents(atPath: (file as NSString).expandingTildeInPath) else {
                        throw FetchError(
                            code: .source, message: "header \(name) reads \(file), which cannot be read; check the path and its permissions", url: url)
                    }
                    var text = String(decoding: d, as: UTF8.self)
                    while text.last == "\n" || text.last == "\r" { text.removeLast() }
                    resolved += text
                    value = String(rest)
                    continue
                }
                if variable.hasPrefix("secret:") {
                    guard let v = secrets?.value(source: self.name, header: String(variable.dropFirst(7))) else {
                        throw FetchError(
                            code: .source,
                            message:
                                "header \(name)'s kept secret is not in this store's \(SourceSecrets.fileName); give it again with `strata source change \(self.name) --header ... --allow-literal-secret`",
                            url: url)
                    }
                    resolved += v
                    value = String(rest)
                    continue
                }
                guard let v = environment[variable] else {
                    throw FetchError(code: .source, message: "header \(name) uses $\(variable), which is not set in the environment", url: url)
                }
                resolved += v
                value = String(rest)
            }
            out.append((name, resolved + value))
        }
        return out
    }

    public var json: JSONValue {
        (try? JSONValue(parsing: (try? JSONEncoder.sorted.encode(self)).map { [UInt8]($0) } ?? [])) ?? .null
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }
}

/// A source's own polling: every `every` seconds, each wait moved by up to `jitter` percent
/// either way (so many sources on one schedule do not all poll at once), with details and images
/// as a fetch with `--details` and `--images` gets them.
public struct FetchSchedule: Codable, Sendable, Hashable {
    public var every: Double
    public var jitter: Int
    /// `all`, `changed`, or nil for the list only.
    public var details: String?
    public var images: Bool

    public init(every: Double, jitter: Int = 0, details: String? = nil, images: Bool = false) {
        self.every = every
        self.jitter = jitter
        self.details = details
        self.images = images
    }

    /// The schedule's problem, if any, naming the flag at fault.
    public var problem: String? {
        guard every.isFinite, every >= 1, every <= 366 * 86_400 else { return "--every must be 1s to 366d" }
        guard (0...50).contains(jitter) else { return "--jitter must be 0 to 50 (percent)" }
        if let details, !["all", "changed"].contains(details) { return "--watch-details takes all or changed" }
        return nil
    }
}
