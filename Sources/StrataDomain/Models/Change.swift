import Foundation
public import StrataJSON

/// One field-level change: a field added, removed or replaced, with its old and new values.
public struct Change: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable { case added, removed, replaced }
    public var kind: Kind
    /// A JSON Pointer (RFC 6901): `/price`, `/owners/0/name`.
    public var path: String
    public var old: JSONValue?
    public var new: JSONValue?

    public init(kind: Kind, path: String, old: JSONValue? = nil, new: JSONValue? = nil) {
        self.kind = kind; self.path = path; self.old = old; self.new = new
    }

    /// Whether the change touches `field` (a dotted path or a JSON Pointer) or something inside it.
    public func touches(_ field: String) -> Bool {
        let pointer = field.hasPrefix("/") ? field : "/" + field.replacingOccurrences(of: ".", with: "/")
        return path == pointer || path.hasPrefix(pointer + "/")
    }
}

/// An item's difference between two points of the log.
public struct ItemDiff: Sendable, Hashable {
    public var id: String
    public var title: String
    public var kind: ChangeKind
    public var changes: [Change]
    public init(id: String, title: String, kind: ChangeKind, changes: [Change]) {
        self.id = id; self.title = title; self.kind = kind; self.changes = changes
    }
}

/// What changed in a source's items between two seqs.
public struct CollectionDiff: Sendable, Hashable {
    public var source: String
    public var fromSeq: UInt64
    public var toSeq: UInt64
    public var items: [ItemDiff]
    public init(source: String, fromSeq: UInt64, toSeq: UInt64, items: [ItemDiff]) {
        self.source = source; self.fromSeq = fromSeq; self.toSeq = toSeq; self.items = items
    }

    public func count(_ kind: ChangeKind) -> Int { items.count { $0.kind == kind } }
}
