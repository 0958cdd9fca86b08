import Foundation

/// An event to append: a past-tense fact with a stable type tag.
public struct NewEvent: Sendable {
    /// Deterministic when the caller derives it from the fact (makes appends idempotent);
    /// random otherwise.
    public var id: String
    public var type: String
    public var schemaVersion: Int
    /// When the fact happened; nil takes the store clock's time. Imports give historical times.
    public var recordedAt: Timestamp?
    /// Which stream the event belongs to, e.g. a source name.
    public var stream: String
    /// Small key/values: URL, HTTP status, ETag, run id, duration. Never secrets.
    public var metadata: [(key: String, value: String)]
    /// The body, stored once by content hash.
    public var payload: [UInt8]?
    /// Instead of `payload`: a body already in the store (e.g. the unchanged body behind a 304),
    /// referenced without storing anything again. Appending fails if the body is not stored.
    public var payloadReference: PayloadReference?
    /// The payload's canonical JSON form (`JSONValue.canonicalize(payload)`), when the caller
    /// already worked it out while checking the body (the fetch path does): a projection storing
    /// the body as a document then uses it instead of canonicalizing again.
    package var canonicalPayload: [UInt8]?
    /// Values the projections would work out from this event (``ProjectionContext/shared(_:_:_:)``),
    /// worked out already by the caller from `payload` off the writer thread (an import's items,
    /// found while checking each snapshot): the writer hands them to the fold instead of it
    /// working them out again. Each must be what the fold's `make` gives for the event; a rebuild
    /// works them out.
    package var shared: [SharedValue] = []
    /// The payload is stored in its lineage's window of versions, each object listed in it (a
    /// page's items) kept once (``BodyWindow``); false stores it as a delta of the version
    /// before it.
    package var windowed = false
    /// The payload is what an erasure left of a body this store never held: it is stored under
    /// the original's digest, as the node that erased it holds it, with its `rewritten` row
    /// (``ErasedForm``), so both nodes hold the same envelope and fold the same projections.
    public var erasedForm: ErasedForm?

    public init(
        id: String? = nil, type: String, schemaVersion: Int = 1, recordedAt: Timestamp? = nil,
        stream: String, metadata: [(key: String, value: String)] = [], payload: [UInt8]? = nil,
        payloadReference: PayloadReference? = nil
    ) {
        self.id = id ?? RandomID.uuid()
        self.type = type
        self.schemaVersion = schemaVersion
        self.recordedAt = recordedAt
        self.stream = stream
        self.metadata = metadata
        self.payload = payload
        self.payloadReference = payloadReference
    }
}

/// A value of ``NewEvent/shared``: `kind` as the projections name it, and its size in bytes.
package struct SharedValue: Sendable {
    package var kind: String
    package var value: any Sendable
    package var bytes: Int

    package init(kind: String, value: any Sendable, bytes: Int) {
        self.kind = kind
        self.value = value
        self.bytes = bytes
    }
}

/// The original of an erased body, and the seq of the erasure that rewrote it
/// (``NewEvent/erasedForm``).
public struct ErasedForm: Sendable, Hashable {
    public var original: [UInt8]
    public var erasureSeq: UInt64
    public init(original: [UInt8], erasureSeq: UInt64) {
        self.original = original
        self.erasureSeq = erasureSeq
    }
}

/// A batch of events whose bodies are being prepared ahead of its append
/// (``EventStore/prepare(_:)``).
public struct PreparedBatch: Sendable {
    let prep: AppendPrep
    public var events: [NewEvent] { prep.batch }
}

/// A reference to a content-addressed body in the blob database.
public struct PayloadReference: Hashable, Sendable {
    public init(hash: [UInt8], size: Int) {
        self.hash = hash
        self.size = size
    }

    /// From a lower-case hex SHA-256.
    public init?(hashHex: String, size: Int) {
        guard let h = [UInt8](hex: hashHex), h.count == 32 else { return nil }
        self.init(hash: h, size: size)
    }

    /// SHA-256 of the uncompressed bytes.
    public var hash: [UInt8]
    /// Uncompressed size in bytes.
    public var size: Int

    public var hashHex: String { hash.hex }
}

/// An event as stored in the log: the envelope, chained to its predecessor by hash.
public struct RecordedEvent: Hashable, Sendable {
    public var seq: UInt64
    public var id: String
    public var type: String
    public var schemaVersion: Int
    public var recordedAt: Timestamp
    public var stream: String
    public var metadata: [Metadatum]
    public var payload: PayloadReference?
    /// Hash of the previous event (32 zero bytes for the first).
    public var previousHash: [UInt8]
    /// SHA-256 over this envelope's encoding, which includes `previousHash` and the payload hash.
    public var hash: [UInt8]

    /// An event as another log (``EventLog``) holds it, with that log's seq and chain hashes.
    public init(
        seq: UInt64, id: String, type: String, schemaVersion: Int, recordedAt: Timestamp, stream: String,
        metadata: [Metadatum], payload: PayloadReference?, previousHash: [UInt8], hash: [UInt8]
    ) {
        self.seq = seq; self.id = id; self.type = type; self.schemaVersion = schemaVersion; self.recordedAt = recordedAt
        self.stream = stream; self.metadata = metadata; self.payload = payload; self.previousHash = previousHash; self.hash = hash
    }

    public struct Metadatum: Hashable, Sendable {
        public var key: String
        public var value: String
        public init(key: String, value: String) { self.key = key; self.value = value }
    }

    /// The first metadata value under `key`.
    public subscript(metadata key: String) -> String? {
        metadata.first { $0.key == key }?.value
    }
}

/// What happened to one event of an append batch.
public struct AppendOutcome: Hashable, Sendable {
    public var seq: UInt64
    public var id: String
    /// False when an event with the same id was already in the log; `seq` is then the original's.
    public var appended: Bool

    public init(seq: UInt64, id: String, appended: Bool) {
        self.seq = seq; self.id = id; self.appended = appended
    }
}
