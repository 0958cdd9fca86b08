/// How Strata mirrors one JSON collection API: where the list is, how to find the items and
/// their ids in it, how to page, where each item's detail and image are, and where writes go.
public struct SourceSpec: Sendable, Hashable {
    /// The source's name, which its events carry as their stream.
    public var name: String
    /// The list endpoint (http, https or file).
    public var url: String
    /// Dotted path to the items (an array, or an object whose keys are ids); nil: the body itself.
    public var items: String?
    /// Dotted paths whose values, joined with ":", form the item id; `["@key"]` for object maps.
    public var id: [String]
    /// Path of the title field.
    public var title: String?
    /// Paths of the fields shown under the title.
    public var subtitle: [String]
    /// Path of the image URL.
    public var image: String?
    /// A detail URL template with `{id}`.
    public var detailURL: String?
    /// A field of the item holding its detail URL (may be relative to the list URL).
    public var detailURLField: String?
    /// Dotted path to the next page's URL in the body.
    public var next: String?
    /// Page-number paging: the page parameter's name; sizes go in `sizeParam`.
    public var pageParam: String?
    /// The page-size parameter's name.
    public var sizeParam: String
    /// Items per page.
    public var pageSize: Int?
    /// Fields indexed for filtering.
    public var index: [String]
    /// Header templates, `Name: value`; `$VAR`, `${file:PATH}` and `${secret:NAME}` are resolved at each fetch, never stored resolved.
    public var headers: [String]
    /// Cursor paging: the dotted path of the next cursor in the body.
    public var cursorPath: String?
    /// Cursor paging: the parameter the cursor is sent back in.
    public var cursorParam: String?
    /// Offset paging: the offset parameter; pages of `pageSize`.
    public var offsetParam: String?
    /// Offset paging: the dotted path of the total count in the body.
    public var totalPath: String?
    /// The parameter that carries `pageSize` for cursor, offset and after-id paging.
    public var limitParam: String?
    /// After-id paging: the parameter given the last item's id.
    public var afterParam: String?
    /// After-id paging: the dotted path of a has-more flag.
    public var hasMorePath: String?
    /// The write side (all optional; a source without them is read-only).
    /// Where new items are POSTed.
    public var createURL: String?
    /// An item's URL for updates, a template with `{id}`.
    public var updateURL: String?
    /// `PATCH` (default) or `PUT`.
    public var updateMethod: String?
    /// The body of a PATCH: `json-patch` (default) or `merge-patch`.
    public var patchFormat: String?
    /// An item's URL for deletes, a template with `{id}`.
    public var deleteURL: String?
    /// Dotted path of the field naming an item's owner.
    public var ownerField: String?

    public init(
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
