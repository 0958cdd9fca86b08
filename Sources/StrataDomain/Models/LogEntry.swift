package import Foundation

/// One event of the log, for people: what happened, when, to which stream.
package struct LogEntry: Sendable, Hashable {
    package var seq: UInt64
    package var recordedAt: Date
    package var type: String
    package var stream: String
    package var metadata: [Field]
    package var payloadSize: Int?
    /// SHA-256 of the payload, when there is one.
    package var payloadSHA256: String?
    package var hash: String
    /// The event's id (idempotency key).
    package var id: String
    /// The version of the payload's schema.
    package var schemaVersion: Int
    /// The hash of the event before it in the chain (hex).
    package var previousHash: String

    package init(
        seq: UInt64, recordedAt: Date, type: String, stream: String, metadata: [Field] = [], payloadSize: Int? = nil,
        payloadSHA256: String? = nil, hash: String, id: String = "", schemaVersion: Int = 1, previousHash: String = ""
    ) {
        self.seq = seq; self.recordedAt = recordedAt; self.type = type; self.stream = stream; self.metadata = metadata
        self.payloadSize = payloadSize; self.payloadSHA256 = payloadSHA256; self.hash = hash; self.id = id
        self.schemaVersion = schemaVersion; self.previousHash = previousHash
    }

    package subscript(metadata key: String) -> String? { metadata.first { $0.path == key }?.value }

    /// Whether the event records a failure.
    package var isFailure: Bool { type.hasSuffix("Failed") }
}

/// Which events to read.
package struct LogQuery: Sendable, Hashable {
    package var stream: String?
    package var type: String?
    package var fromSeq: UInt64
    package var toSeq: UInt64
    package var limit: Int
    package var newestFirst: Bool
    package init(stream: String? = nil, type: String? = nil, fromSeq: UInt64 = 1, toSeq: UInt64 = .max, limit: Int = 50, newestFirst: Bool = true) {
        self.stream = stream; self.type = type; self.fromSeq = fromSeq; self.toSeq = toSeq; self.limit = limit; self.newestFirst = newestFirst
    }
}
