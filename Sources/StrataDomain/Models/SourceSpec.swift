/// How Strata mirrors one JSON collection API: where the list is, how to find the items and
/// their ids in it, how to page, where each item's detail and image are, and where writes go.
package struct SourceSpec: Sendable, Hashable {
    /// The source's name, which its events carry as their stream.
    package var name: String
    /// The list endpoint (http, https or file).
    package var url: String
    /// Dotted path to the items (an array, or an object whose keys are ids); nil: the body itself.
    package var items: String?
    /// Dotted paths whose values, joined with ":", form the item id; `["@key"]` for object maps.
    package var id: [String]
    /// Path of the title field.
    package var title: String?
    /// Paths of the fields shown under the title.
    package var subtitle: [String]
    /// Path of the image URL.
    package var image: String?
    /// A detail URL template with `{id}`.
    package var detailURL: String?
    /// A field of the item holding its detail URL (may be relative to the list URL).
    package var detailURLField: String?
    /// Dotted path to the next page's URL in the body.
    package var next: String?
    /// Page-number paging: the page parameter's name; sizes go in `sizeParam`.
    package var pageParam: String?
    /// The page-size parameter's name.
    package var sizeParam: String
    /// Items per page.
    package var pageSize: Int?
    /// Fields indexed for filtering.
    package var index: [String]
    /// Header templates, `Name: value`; `$VAR`, `${file:PATH}` and `${secret:NAME}` are resolved at each fetch, never stored resolved.
    package var headers: [String]
    /// Cursor paging: the dotted path of the next cursor in the body.
    package var cursorPath: String?
    /// Cursor paging: the parameter the cursor is sent back in.
    package var cursorParam: String?
    /// Offset paging: the offset parameter; pages of `pageSize`.
    package var offsetParam: String?
    /// Offset paging: the dotted path of the total count in the body.
    package var totalPath: String?
    /// The parameter that carries `pageSize` for cursor, offset and after-id paging.
    package var limitParam: String?
    /// After-id paging: the parameter given the last item's id.
    package var afterParam: String?
    /// After-id paging: the dotted path of a has-more flag.
    package var hasMorePath: String?
    /// The write side (all optional; a source without them is read-only).
    /// Where new items are POSTed.
    package var createURL: String?
    /// An item's URL for updates, a template with `{id}`.
    package var updateURL: String?
    /// `PATCH` (default) or `PUT`.
    package var updateMethod: String?
    /// The body of a PATCH: `json-patch` (default) or `merge-patch`.
    package var patchFormat: String?
    /// An item's URL for deletes, a template with `{id}`.
    package var deleteURL: String?
    /// Dotted path of the field naming an item's owner.
    package var ownerField: String?
    /// When `strata watch` fetches the source by itself; nil: only when asked.
    package var schedule: SourceSchedule?
    /// Fields whose changes alone make no new item version (they change on every poll).
    package var ignore: [String] = []
    /// Exchanges recorded by `strata proxy` or imported from HAR and WARC: no list to fetch.
    package var isRecorded = false
    /// Fields (dotted paths in each item and detail, or a recorded JSON body) whose values are
    /// replaced by keyed placeholders before anything is stored.
    package var redact: [String] = []
    /// Headers recorded traffic keeps only as placeholders, beside the credentials always masked.
    package var redactHeaders: [String] = []
    /// Retention: keep this many seconds of history, or the newest this many complete passes;
    /// older bodies and versions are dropped at compaction. Nil: keep everything.
    package var keepSeconds: Double?
    package var keepVersions: Int?

    package init(
        name: String, url: String, items: String? = nil, id: [String] = ["id"], title: String? = nil, subtitle: [String] = [], image: String? = nil,
        detailURL: String? = nil, detailURLField: String? = nil, next: String? = nil, pageParam: String? = nil, sizeParam: String = "size",
        pageSize: Int? = nil, index: [String] = [], headers: [String] = [], cursorPath: String? = nil, cursorParam: String? = nil, offsetParam: String? = nil,
        totalPath: String? = nil, limitParam: String? = nil, afterParam: String? = nil, hasMorePath: String? = nil
    ) {
        self.name = name
        self.url = url
        self.items = items
        self.id = id
        self.title = title
        self.subtitle = subtitle
        self.image = image
        self.detailURL = detailURL
        self.detailURLField = detailURLField
        self.next = next
        self.pageParam = pageParam
        self.sizeParam = sizeParam
        self.pageSize = pageSize
        self.index = index
        self.headers = headers
        self.cursorPath = cursorPath
        self.cursorParam = cursorParam
        self.offsetParam = offsetParam
        self.totalPath = totalPath
        self.limitParam = limitParam
        self.afterParam = afterParam
        self.hasMorePath = hasMorePath
    }
}

/// A source's own polling (``WatchSources``): every `every` seconds, each wait moved by up to
/// `jitter` percent either way, fetching what `request` asks besides the list.
package struct SourceSchedule: Sendable, Hashable {
    package var every: Double
    package var jitter: Int
    package var details: RefreshRequest.Details
    package var images: Bool

    package init(every: Double, jitter: Int = 0, details: RefreshRequest.Details = .none, images: Bool = false) {
        self.every = every
        self.jitter = jitter
        self.details = details
        self.images = images
    }

    package var request: RefreshRequest { RefreshRequest(details: details, images: images) }
}

extension SourceSpec {
    /// A field of a spec, by the definition's key: what a problem names and each front end words
    /// (the CLI as its flag).
    package enum Field: String, Sendable, Hashable, CaseIterable {
        case name, url, items, id, title, subtitle, image, detailURL, detailURLField, next, pageParam, sizeParam, pageSize, index, header
        case cursorPath, cursorParam, offsetParam, totalPath, limitParam, afterParam, hasMorePath
        case createURL, updateURL, updateMethod, patchFormat, deleteURL, ownerField
        case every, jitter, details, ignore, redact, redactHeader, keep, keepVersions
    }
}
