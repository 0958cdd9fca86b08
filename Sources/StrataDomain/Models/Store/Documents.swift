public import StrataJSON

/// A keyed document at some point: its version in force, when it was first seen and changed.
public struct KeyedDocument: Sendable, Hashable {
    public var collection: String
    public var key: String
    public var version: Int
    public var firstSeq: UInt64
    public var changedSeq: UInt64
    /// The last event that saw it (current state only).
    public var lastSeenSeq: UInt64?
    public var removed: Bool
    public var document: JSONValue
    public init(
        collection: String, key: String, version: Int, firstSeq: UInt64, changedSeq: UInt64, lastSeenSeq: UInt64?, removed: Bool, document: JSONValue
    ) {
        self.collection = collection; self.key = key; self.version = version; self.firstSeq = firstSeq; self.changedSeq = changedSeq
        self.lastSeenSeq = lastSeenSeq; self.removed = removed; self.document = document
    }
}

/// One version of a keyed document with its field-level changes (RFC 6902 with old values).
public struct KeyedDocumentVersion: Sendable, Hashable {
    public var collection: String
    public var key: String
    public var version: Int
    public var seq: UInt64
    public var recordedAt: LogTime
    public var kind: ChangeKind
    public var document: JSONValue
    public var changes: [PatchOperation]
    public init(
        collection: String, key: String, version: Int, seq: UInt64, recordedAt: LogTime, kind: ChangeKind, document: JSONValue,
        changes: [PatchOperation]
    ) {
        self.collection = collection; self.key = key; self.version = version; self.seq = seq; self.recordedAt = recordedAt; self.kind = kind
        self.document = document; self.changes = changes
    }
}

/// One document's difference between two points of the log.
public struct KeyedDocumentDiff: Sendable, Hashable {
    public var key: String
    public var kind: ChangeKind
    public var before: JSONValue?
    public var after: JSONValue?
    public var changes: [PatchOperation]
    public init(key: String, kind: ChangeKind, before: JSONValue?, after: JSONValue?, changes: [PatchOperation]) {
        self.key = key; self.kind = kind; self.before = before; self.after = after; self.changes = changes
    }
}
