package import EventStore

/// The team log's hash chain: each event's hash is SHA-256 over the hash before it (32 zero bytes
/// before seq 1) and the event's fields, each as `u64be length, bytes`: seq (u64be), id, type,
/// schema version, recorded-at µs (i64be), stream, every metadata key and value, body hash and
/// size. A pull checks every link, so a row changed in PostgreSQL is found.
package enum TeamChain {
    package static let zero = [UInt8](repeating: 0, count: 32)

    package static func hash(previous: [UInt8], seq: UInt64, event: TeamEvent) -> [UInt8] {
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
package struct TeamEvent: Sendable, Hashable {
    package var id: String
    package var type: String
    package var schemaVersion: Int
    package var recordedAt: Timestamp
    package var stream: String
    package var metadata: [RecordedEvent.Metadatum]
    package var bodyHash: [UInt8]?
    package var bodySize: Int?

    package init(_ e: RecordedEvent) {
        id = e.id
        type = e.type
        schemaVersion = e.schemaVersion
        recordedAt = e.recordedAt
        stream = e.stream
        metadata = e.metadata
        bodyHash = e.payload?.hash
        bodySize = e.payload?.size
    }

    package init(
        id: String, type: String, schemaVersion: Int, recordedAt: Timestamp, stream: String,
        metadata: [RecordedEvent.Metadatum], bodyHash: [UInt8]?, bodySize: Int?
    ) {
        self.id = id; self.type = type; self.schemaVersion = schemaVersion; self.recordedAt = recordedAt
        self.stream = stream; self.metadata = metadata; self.bodyHash = bodyHash; self.bodySize = bodySize
    }
}
