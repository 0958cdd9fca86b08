import Foundation
import LMDB

/// What an event says about keyed documents.
public enum DocumentOperation: Sendable, Hashable {
    /// The document under `key` is now `document`.
    case put(collection: String, key: String, document: JSONValue)
    /// The document under `key` is now the JSON text `json`: canonicalized straight from the text
    /// (the tree is only built when the collection has indexes). Malformed text throws.
    case putJSON(collection: String, key: String, json: [UInt8])
    /// The document under `key` is now `canonical`, a text as `JSONValue.canonicalize` gives it,
    /// whose first 16 bytes of SHA-256 are `digest`: what a fold worked out once for several
    /// projections (a page's items, for the items and the schema), so neither is done again.
    /// Taken as given: the caller vouches for both.
    case putCanonical(collection: String, key: String, canonical: [UInt8], digest: [UInt8])
    /// ``putCanonical(collection:key:canonical:digest:)`` of the text at `range` of the event's
    /// payload's form (``PayloadSlice/form(of:)``: the payload without its pretty-printing;
    /// `canonical` is that text canonicalized): a version of it may be kept as a reference to
    /// those bytes of the log's body instead of a copy (``PayloadSlice``).
    case putSlice(collection: String, key: String, canonical: [UInt8], digest: [UInt8], range: Range<Int>)
    /// The present document under `key` is unchanged: it is only marked seen (for ``sweep``),
    /// as a put of the same document would; nothing when it is absent or removed. For an
    /// extractor that knows its document did not change without building it again.
    case seen(collection: String, key: String)
    /// The document under `key` is gone.
    case remove(collection: String, key: String)
    /// The complete set of documents in `collection`: absent keys are removed.
    case snapshot(collection: String, documents: [(key: String, document: JSONValue)])
    /// Removes every present document of `collection` not seen (put) at or after seq `since`:
    /// the end of a complete pass over a paged collection.
    case sweep(collection: String, since: UInt64)
    /// Keeps an exact-match index on these dotted paths of `collection`'s present documents
    /// (replacing any earlier set; an empty list drops the index).
    case index(collection: String, paths: [String])

    public static func == (a: DocumentOperation, b: DocumentOperation) -> Bool {
        switch (a, b) {
        case let (.put(c1, k1, d1), .put(c2, k2, d2)): return c1 == c2 && k1 == k2 && d1 == d2
        case let (.putJSON(c1, k1, j1), .putJSON(c2, k2, j2)): return c1 == c2 && k1 == k2 && j1 == j2
        case let (.putCanonical(c1, k1, j1, _), .putCanonical(c2, k2, j2, _)): return c1 == c2 && k1 == k2 && j1 == j2
        case let (.putSlice(c1, k1, j1, _, r1), .putSlice(c2, k2, j2, _, r2)): return c1 == c2 && k1 == k2 && j1 == j2 && r1 == r2
        case let (.remove(c1, k1), .remove(c2, k2)): return c1 == c2 && k1 == k2
        case let (.seen(c1, k1), .seen(c2, k2)): return c1 == c2 && k1 == k2
        case let (.snapshot(c1, d1), .snapshot(c2, d2)):
            return c1 == c2 && d1.count == d2.count && zip(d1, d2).allSatisfy { $0.key == $1.key && $0.document == $1.document }
        case let (.sweep(c1, s1), .sweep(c2, s2)): return c1 == c2 && s1 == s2
        case let (.index(c1, p1), .index(c2, p2)): return c1 == c2 && p1 == p2
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case let .put(c, k, _): h.combine(0); h.combine(c); h.combine(k)
        case let .remove(c, k): h.combine(1); h.combine(c); h.combine(k)
        case let .snapshot(c, d): h.combine(2); h.combine(c); h.combine(d.count)
        case let .sweep(c, s): h.combine(3); h.combine(c); h.combine(s)
        case let .index(c, p): h.combine(4); h.combine(c); h.combine(p)
        case let .putJSON(c, k, _): h.combine(5); h.combine(c); h.combine(k)
        case let .seen(c, k): h.combine(6); h.combine(c); h.combine(k)
        case let .putCanonical(c, k, _, _): h.combine(7); h.combine(c); h.combine(k)
        case let .putSlice(c, k, _, _, r): h.combine(8); h.combine(c); h.combine(k); h.combine(r.lowerBound)
        }
    }
}

/// The built-in, domain-agnostic document events that ``KeyedDocumentProjection`` understands
/// out of the box. Metadata `collection` names the collection; `key` the document.
public enum DocumentEvents {
    /// Payload: the document (JSON). Metadata: `collection`, `key`.
    public static let recorded = "DocumentRecorded"
    /// No payload. Metadata: `collection`, `key`.
    public static let removed = "DocumentRemoved"
    /// Payload: a JSON object mapping every key of the collection to its document.
    /// Metadata: `collection`.
    public static let snapshotRecorded = "SnapshotRecorded"

    /// The types ``operations(_:_:)`` reads.
    public static let types: Set<String> = [recorded, removed, snapshotRecorded]

    /// The collection and key of a ``recorded`` event.
    static func recordedKey(_ event: RecordedEvent) throws -> (collection: String, key: String) {
        guard let collection = event[metadata: "collection"] else { throw DocumentError("metadata 'collection' is missing") }
        guard let key = event[metadata: "key"] else { throw DocumentError("metadata 'key' is missing") }
        return (collection, key)
    }

    /// The body of a ``recorded`` event (its document).
    static func recordedBody(_ event: RecordedEvent, _ context: ProjectionContext) throws -> [UInt8] {
        guard let body = try context.payload(of: event) else { throw DocumentError("the event has no payload") }
        return body
    }

    /// Reads the operations of a built-in document event; nil for other events.
    public static func operations(_ event: RecordedEvent, _ context: ProjectionContext) throws -> [DocumentOperation]? {
        switch event.type {
        case recorded, removed, snapshotRecorded: break
        default: return nil
        }
        if event.type == recorded {
            let (collection, key) = try recordedKey(event)
            return [.putJSON(collection: collection, key: key, json: try recordedBody(event, context))]
        }
        guard let collection = event[metadata: "collection"] else { throw DocumentError("metadata 'collection' is missing") }
        switch event.type {
        case removed:
            guard let key = event[metadata: "key"] else { throw DocumentError("metadata 'key' is missing") }
            return [.remove(collection: collection, key: key)]
        default:
            guard let body = try context.payload(of: event) else { throw DocumentError("the event has no payload") }
            guard case .object(let map) = try JSONValue(parsing: body) else {
                throw DocumentError("a snapshot payload must be a JSON object of key → document")
            }
            return [.snapshot(collection: collection, documents: JSONValue.sortedMembers(map).map { ($0.key, $0.value) })]
        }
    }
}

/// A failure to interpret an event as document operations (the event gets quarantined).
public struct DocumentError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// How a version came to be.
public enum ChangeKind: String, Sendable, Codable, CaseIterable {
    case added, changed, removed, reappeared

    /// The kind's byte in a `history` record (above any length of a name, which earlier records
    /// held instead).
    var code: UInt8 {
        switch self {
        case .added: 0x80
        case .changed: 0x81
        case .removed: 0x82
        case .reappeared: 0x83
        }
    }

    init?(code: UInt8) {
        switch code {
        case 0x80: self = .added
        case 0x81: self = .changed
        case 0x82: self = .removed
        case 0x83: self = .reappeared
        default: return nil
        }
    }
}

/// One version of a document as its record holds it: the header, and the document as stored
/// (maybe a delta against a keyframe), nothing decoded or parsed. For a reader that looks at many
/// versions and reads few: decoding and parsing are most of what reading a version costs.
/// ``StoredDocumentTexts`` decodes them.
public struct StoredDocumentVersion: Sendable {
    public var version: Int
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var kind: ChangeKind
    let document: KeyedDocumentProjection.DocumentSource
    /// The record's own field changes (RFC 6902 as JSON), empty when it has none.
    let storedChanges: [UInt8]

    public var isRemoved: Bool { kind == .removed }
}

/// The texts of one document's stored versions, each decoded when first asked for and each
/// keyframe once (16 versions share one). Valid only inside its reader's transaction.
public final class StoredDocumentTexts {
    public let versions: [StoredDocumentVersion]
    let reader: DocumentReader
    let collection: String
    let key: String
    private var texts: [Int: [UInt8]] = [:]
    private var keyframes: [UInt64: [UInt8]] = [:]

    public init(_ versions: [StoredDocumentVersion], collection: String, key: String, reader: DocumentReader) {
        self.versions = versions; self.collection = collection; self.key = key; self.reader = reader
    }

    /// The JSON text of version `i`: canonical, or, for a version stored as its event's payload,
    /// the payload as the event carried it (the same document, maybe in another key order).
    public func text(_ i: Int) throws -> [UInt8] {
        if let t = texts[i] { return t }
        let document = versions[i].document
        let t: [UInt8]
        if case let .delta(keyframe, _, _, _) = document {
            let base = try keyframes[keyframe] ?? KeyedDocumentProjection.keyframeText(collection, key, at: keyframe, reader.transaction, reader.tables)
            keyframes[keyframe] = base
            t = try document.text(onKeyframe: base)
        } else {
            t = try document.text(collection, key, reader.transaction, reader.tables)
        }
        texts[i] = t
        return t
    }

    /// Version `i` parsed, its changes those its record holds (empty when it holds none).
    public func parsed(_ i: Int) throws -> DocumentVersion {
        let v = versions[i]
        var changes: [PatchOperation] = []
        if !v.storedChanges.isEmpty, case .array(let ops) = try JSONValue(parsing: v.storedChanges) {
            changes = try ops.map { try PatchOperation(json: $0) }
        }
        return DocumentVersion(
            collection: collection, key: key, version: v.version, seq: v.seq, recordedAt: v.recordedAt, kind: v.kind,
            document: try JSONValue(parsing: text(i)), changes: changes)
    }
}

/// One version of a document, as stored in the history table.
public struct DocumentVersion: Sendable, Hashable {
    public var collection: String
    public var key: String
    /// 1 for the first version, +1 for every change, removal or reappearance.
    public var version: Int
    /// The event that produced this version.
    public var seq: UInt64
    public var recordedAt: Timestamp
    public var kind: ChangeKind
    /// The document at this version; for a removal, the last document before it.
    public var document: JSONValue
    /// Field-level changes from the previous version (empty for `added` and `removed`).
    public var changes: [PatchOperation]

    public var isRemoved: Bool { kind == .removed }
}

/// The state of a document at some point: its latest version there plus when it was first seen.
public struct DocumentState: Sendable, Hashable {
    public var collection: String
    public var key: String
    public var version: Int
    public var firstSeq: UInt64
    /// The seq of the version in force.
    public var changedSeq: UInt64
    /// The last event that saw the document (current state only; nil for as-of reads).
    public var lastSeenSeq: UInt64?
    public var removed: Bool
    public var document: JSONValue
}
