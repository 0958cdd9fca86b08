import Foundation
package import StrataJSON

/// One field-level change: a field added, removed or replaced, with its old and new values.
package struct Change: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable, Codable { case added, removed, replaced }
    package var kind: Kind
    /// A JSON Pointer (RFC 6901): `/price`, `/owners/0/name`.
    package var path: String
    package var old: JSONValue?
    package var new: JSONValue?

    package init(kind: Kind, path: String, old: JSONValue? = nil, new: JSONValue? = nil) {
        self.kind = kind; self.path = path; self.old = old; self.new = new
    }

    /// Whether the change touches `field` (a dotted path or a JSON Pointer) or something inside it.
    package func touches(_ field: String) -> Bool {
        let pointer = field.hasPrefix("/") ? field : "/" + field.replacingOccurrences(of: ".", with: "/")
        return path == pointer || path.hasPrefix(pointer + "/")
    }
}

/// An item's difference between two points of the log.
package struct ItemDiff: Sendable, Hashable {
    package var id: String
    package var title: String
    package var kind: ChangeKind
    package var changes: [Change]
    /// The item before the change (nil when it was added) and after it (nil when it was removed).
    package var before: JSONValue?
    package var after: JSONValue?
    package init(id: String, title: String, kind: ChangeKind, changes: [Change], before: JSONValue? = nil, after: JSONValue? = nil) {
        self.id = id; self.title = title; self.kind = kind; self.changes = changes; self.before = before; self.after = after
    }
}

/// What changed in a source's items between two seqs.
package struct CollectionDiff: Sendable, Hashable {
    package var source: String
    package var fromSeq: UInt64
    package var toSeq: UInt64
    package var items: [ItemDiff]
    package init(source: String, fromSeq: UInt64, toSeq: UInt64, items: [ItemDiff]) {
        self.source = source; self.fromSeq = fromSeq; self.toSeq = toSeq; self.items = items
    }

    package func count(_ kind: ChangeKind) -> Int { items.count { $0.kind == kind } }
}
