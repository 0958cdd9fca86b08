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

    /// The limit parameter and its value, for cursor, offset and after-id paging (`limit`
    /// unless `limitParam` names another); empty when no page size is set or pages are numbered.
    var limitQuery: [(String, String)] {
        guard let size = pageSize, pageParam == nil else { return [] }
        return [(limitParam ?? "limit", String(size))]
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
                    code: .source, message: "header '\(h.prefix(40))' must look like 'Name: value'", url: url, subject: .field("header"))
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
                            message: "header \(name)'s kept secret is not in this store's \(SourceSecrets.fileName)", url: url,
                            subject: .keptSecret(header: name))
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
}
