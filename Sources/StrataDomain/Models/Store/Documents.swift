package import StrataJSON

/// A keyed document at some point: its version in force, when it was first seen and changed.
package struct KeyedDocument: Sendable, Hashable {
    package var collection: String
    package var key: String
    package var version: Int
    package var firstSeq: UInt64
    package var changedSeq: UInt64
    /// The last event that saw it (current state only).
    package var lastSeenSeq: UInt64?
    package var removed: Bool
    package var document: JSONValue
    package init(
        collection: String, key: String, version: Int, firstSeq: UInt64, changedSeq: UInt64, lastSeenSeq: UInt64?, removed: Bool, document: JSONValue
    ) {
        self.collection = collection; self.key = key; self.version = version; self.firstSeq = firstSeq; self.changedSeq = changedSeq
        self.lastSeenSeq = lastSeenSeq; self.removed = removed; self.document = document
    }
}

/// One version of a keyed document with its field-level changes (RFC 6902 with old values).
package struct KeyedDocumentVersion: Sendable, Hashable {
    package var collection: String
    package var key: String
    package var version: Int
    package var seq: UInt64
    package var recordedAt: LogTime
    package var kind: ChangeKind
    package var document: JSONValue
    package var changes: [PatchOperation]
    package init(
        collection: String, key: String, version: Int, seq: UInt64, recordedAt: LogTime, kind: ChangeKind, document: JSONValue,
        changes: [PatchOperation]
    ) {
        self.collection = collection; self.key = key; self.version = version; self.seq = seq; self.recordedAt = recordedAt; self.kind = kind
        self.document = document; self.changes = changes
    }
}

/// One document's difference between two points of the log.
package struct KeyedDocumentDiff: Sendable, Hashable {
    package var key: String
    package var kind: ChangeKind
    package var before: JSONValue?
    package var after: JSONValue?
    package var changes: [PatchOperation]
    package init(key: String, kind: ChangeKind, before: JSONValue?, after: JSONValue?, changes: [PatchOperation]) {
        self.key = key; self.kind = kind; self.before = before; self.after = after; self.changes = changes
    }
}
