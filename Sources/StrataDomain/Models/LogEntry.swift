public import Foundation

/// One event of the log, for people: what happened, when, to which stream.
public struct LogEntry: Sendable, Hashable {
    public var seq: UInt64
    public var recordedAt: Date
    public var type: String
    public var stream: String
    public var metadata: [Field]
    public var payloadSize: Int?
    /// SHA-256 of the payload, when there is one.
    public var payloadSHA256: String?
    public var hash: String
    /// The event's id (idempotency key).
    public var id: String
    /// The version of the payload's schema.
    public var schemaVersion: Int
    /// The hash of the event before it in the chain (hex).
    public var previousHash: String

    public init(
        seq: UInt64, recordedAt: Date, type: String, stream: String, metadata: [Field] = [], payloadSize: Int? = nil,
        payloadSHA256: String? = nil, hash: String, id: String = "", schemaVersion: Int = 1, previousHash: String = ""
    ) {
        self.seq = seq; self.recordedAt = recordedAt; self.type = type; self.stream = stream; self.metadata = metadata
        self.payloadSize = payloadSize; self.payloadSHA256 = payloadSHA256; self.hash = hash; self.id = id
        self.schemaVersion = schemaVersion; self.previousHash = previousHash
    }

    public subscript(metadata key: String) -> String? { metadata.first { $0.path == key }?.value }

    /// Whether the event records a failure.
    public var isFailure: Bool { type.hasSuffix("Failed") }
}

/// Which events to read.
public struct LogQuery: Sendable, Hashable {
    public var stream: String?
    public var type: String?
    public var fromSeq: UInt64
    public var toSeq: UInt64
    public var limit: Int
    public var newestFirst: Bool
    public init(stream: String? = nil, type: String? = nil, fromSeq: UInt64 = 1, toSeq: UInt64 = .max, limit: Int = 50, newestFirst: Bool = true) {
        self.stream = stream; self.type = type; self.fromSeq = fromSeq; self.toSeq = toSeq; self.limit = limit; self.newestFirst = newestFirst
    }
}
