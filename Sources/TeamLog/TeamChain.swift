public import EventStore

/// The team log's hash chain: each event's hash is SHA-256 over the hash before it (32 zero bytes
/// before seq 1) and the event's fields, each as `u64be length, bytes`: seq (u64be), id, type,
/// schema version, recorded-at µs (i64be), stream, every metadata key and value, body hash and
/// size. A pull checks every link, so a row changed in PostgreSQL is found.
public enum TeamChain {
    public static let zero = [UInt8](repeating: 0, count: 32)

    public static func hash(previous: [UInt8], seq: UInt64, event: TeamEvent) -> [UInt8] {
        var bytes = previous
        func field(_ b: [UInt8]) {
            bytes += UInt64(b.count).bigEndianBytes
            bytes += b
        }
        field(seq.bigEndianBytes)
        field(Array(event.id.utf8))
        field(Array(event.type.utf8))
        field(UInt64(event.schemaVersion).bigEndianBytes)
        field(UInt64(bitPattern: event.recordedAt.microseconds).bigEndianBytes)
        field(Array(event.stream.utf8))
        field(UInt64(event.metadata.count).bigEndianBytes)
        for m in event.metadata { field(Array(m.key.utf8)); field(Array(m.value.utf8)) }
        field(event.bodyHash ?? [])
        field(UInt64(event.bodySize ?? 0).bigEndianBytes)
        return Hashing.sha256(bytes)
    }
}

/// An event as the team log holds it.
public struct TeamEvent: Sendable, Hashable {
    public var id: String
    public var type: String
    public var schemaVersion: Int
    public var recordedAt: Timestamp
    public var stream: String
    public var metadata: [RecordedEvent.Metadatum]
    public var bodyHash: [UInt8]?
    public var bodySize: Int?

    public init(_ e: RecordedEvent) {
        id = e.id
        type = e.type
        schemaVersion = e.schemaVersion
        recordedAt = e.recordedAt
        stream = e.stream
        metadata = e.metadata
        bodyHash = e.payload?.hash
        bodySize = e.payload?.size
    }

    public init(
        id: String, type: String, schemaVersion: Int, recordedAt: Timestamp, stream: String,
        metadata: [RecordedEvent.Metadatum], bodyHash: [UInt8]?, bodySize: Int?
    ) {
        self.id = id; self.type = type; self.schemaVersion = schemaVersion; self.recordedAt = recordedAt
        self.stream = stream; self.metadata = metadata; self.bodyHash = bodyHash; self.bodySize = bodySize
    }
}
