import Foundation
package import StrataJSON

/// One object of a mirrored collection as the app sees it: its list entry, the fields its
/// source chose to show, its stored detail and image, and where it sits in the log.
package struct Item: Sendable, Hashable, Identifiable {
    package var source: String
    package var id: String
    /// The value at the source's title path, else the id.
    package var title: String
    /// The values at the source's subtitle paths, in order, missing ones left out.
    package var subtitle: [String]
    /// The source's indexed fields with their values (the columns a list shows).
    package var fields: [Field]
    /// The list entry as fetched.
    package var document: JSONValue
    /// The detail document, when one was fetched.
    package var detail: JSONValue?
    /// The image URL from the item (or its detail), when the source names an image path.
    package var imageURL: String?
    /// The stored image, when it was downloaded.
    package var image: ItemImage?
    /// 1 for the first version, +1 for every change, removal or reappearance.
    package var version: Int
    /// The event that first recorded the item.
    package var firstSeq: UInt64
    /// The event that produced the version in force.
    package var changedSeq: UInt64
    package var isRemoved: Bool
    /// Local writes the server has not confirmed show in this item (at the point read).
    package var pending: PendingState = .none

    package init(
        source: String, id: String, title: String, subtitle: [String] = [], fields: [Field] = [], document: JSONValue,
        detail: JSONValue? = nil, imageURL: String? = nil, image: ItemImage? = nil, version: Int = 1, firstSeq: UInt64 = 1,
        changedSeq: UInt64 = 1, isRemoved: Bool = false
    ) {
        self.source = source; self.id = id; self.title = title; self.subtitle = subtitle; self.fields = fields
        self.document = document; self.detail = detail; self.imageURL = imageURL; self.image = image
        self.version = version; self.firstSeq = firstSeq; self.changedSeq = changedSeq; self.isRemoved = isRemoved
    }

    /// The value at a dotted path, looked up in the detail first, then the list entry.
    /// The list entry with the detail's fields over it: what an expression reads.
    package var merged: JSONValue {
        guard let detail else { return document }
        guard case .object(var o) = document, case .object(let d) = detail else { return detail }
        for (k, v) in d { o[k] = v }
        return .object(o)
    }

    package func value(atPath path: String) -> JSONValue? {
        detail?.value(atPath: path) ?? document.value(atPath: path)
    }

    /// Every value a dotted path reaches (``JSONValue/values(atPath:)``: arrays on the way apply
    /// to each element), in the detail when it has any there, else in the list entry.
    package func values(atPath path: String) -> [JSONValue] {
        if let detail {
            let found = detail.values(atPath: path)
            if !found.isEmpty { return found }
        }
        return document.values(atPath: path)
    }

    /// Whether a dotted path has several values here (it meets an array), so cannot order items.
    package func pathReachesArray(_ path: String) -> Bool {
        if let detail, detail.value(atPath: path) != nil || !detail.values(atPath: path).isEmpty { return detail.pathReachesArray(path) }
        return document.pathReachesArray(path)
    }
}

/// Whether an item shows local writes not yet confirmed by the server.
package enum PendingState: String, Sendable, Hashable, Codable {
    case none, pending, conflicted
}

/// A named field of an item and its display text.
package struct Field: Sendable, Hashable {
    package var path: String
    package var value: String
    package init(path: String, value: String) { self.path = path; self.value = value }
}

/// A stored image, addressed by the SHA-256 of its bytes.
package struct ItemImage: Sendable, Hashable {
    package var url: String
    package var sha256: String
    package var size: Int
    package var contentType: String
    package init(url: String, sha256: String, size: Int, contentType: String) {
        self.url = url; self.sha256 = sha256; self.size = size; self.contentType = contentType
    }
}

extension Item {
    /// The order people expect ids in: numeric ids by value (2 before 10) and before other ids,
    /// which compare by their UTF-8 bytes.
    package static func idPrecedes(_ a: String, _ b: String) -> Bool {
        switch (UInt64(a), UInt64(b)) {
        case let (x?, y?): return x != y ? x < y : a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return a.utf8.lexicographicallyPrecedes(b.utf8)
        }
    }
}
