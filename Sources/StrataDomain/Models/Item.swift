import Foundation
public import StrataJSON

/// One object of a mirrored collection as the app sees it: its list entry, the fields its
/// source chose to show, its stored detail and image, and where it sits in the log.
public struct Item: Sendable, Hashable, Identifiable {
    public var source: String
    public var id: String
    /// The value at the source's title path, else the id.
    public var title: String
    /// The values at the source's subtitle paths, in order, missing ones left out.
    public var subtitle: [String]
    /// The source's indexed fields with their values (the columns a list shows).
    public var fields: [Field]
    /// The list entry as fetched.
    public var document: JSONValue
    /// The detail document, when one was fetched.
    public var detail: JSONValue?
    /// The image URL from the item (or its detail), when the source names an image path.
    public var imageURL: String?
    /// The stored image, when it was downloaded.
    public var image: ItemImage?
    /// 1 for the first version, +1 for every change, removal or reappearance.
    public var version: Int
    /// The event that first recorded the item.
    public var firstSeq: UInt64
    /// The event that produced the version in force.
    public var changedSeq: UInt64
    public var isRemoved: Bool
    /// Local writes the server has not confirmed show in this item (at the point read).
    public var pending: PendingState = .none

    public init(
        source: String, id: String, title: String, subtitle: [String] = [], fields: [Field] = [], document: JSONValue,
        detail: JSONValue? = nil, imageURL: String? = nil, image: ItemImage? = nil, version: Int = 1, firstSeq: UInt64 = 1,
        changedSeq: UInt64 = 1, isRemoved: Bool = false
    ) {
        self.source = source; self.id = id; self.title = title; self.subtitle = subtitle; self.fields = fields
        self.document = document; self.detail = detail; self.imageURL = imageURL; self.image = image
        self.version = version; self.firstSeq = firstSeq; self.changedSeq = changedSeq; self.isRemoved = isRemoved
    }

    /// The value at a dotted path, looked up in the detail first, then the list entry.
    public func value(atPath path: String) -> JSONValue? {
        detail?.value(atPath: path) ?? document.value(atPath: path)
    }

    /// Every value a dotted path reaches (``JSONValue/values(atPath:)``: arrays on the way apply
    /// to each element), in the detail when it has any there, else in the list entry.
    public func values(atPath path: String) -> [JSONValue] {
        if let detail {
            let found = detail.values(atPath: path)
            if !found.isEmpty { return found }
        }
        return document.values(atPath: path)
    }

    /// Whether a dotted path has several values here (it meets an array), so cannot order items.
    public func pathReachesArray(_ path: String) -> Bool {
        if let detail, detail.value(atPath: path) != nil || !detail.values(atPath: path).isEmpty { return detail.pathReachesArray(path) }
        return document.pathReachesArray(path)
    }
}

/// Whether an item shows local writes not yet confirmed by the server.
public enum PendingState: String, Sendable, Hashable, Codable {
    case none, pending, conflicted
}

/// A named field of an item and its display text.
public struct Field: Sendable, Hashable {
    public var path: String
    public var value: String
    public init(path: String, value: String) { self.path = path; self.value = value }
}

/// A stored image, addressed by the SHA-256 of its bytes.
public struct ItemImage: Sendable, Hashable {
    public var url: String
    public var sha256: String
    public var size: Int
    public var contentType: String
    public init(url: String, sha256: String, size: Int, contentType: String) {
        self.url = url; self.sha256 = sha256; self.size = size; self.contentType = contentType
    }
}
