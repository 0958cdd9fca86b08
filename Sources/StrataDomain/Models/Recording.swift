public import Foundation

/// A response Strata recorded for a URL: what the API answered at one fetch, to be served again.
public struct Recording: Sendable, Hashable {
    /// Where another recording of the same URL sits.
    public struct Ref: Sendable, Hashable {
        public var seq: UInt64
        public var recordedAt: Date
        public init(seq: UInt64, recordedAt: Date) { self.seq = seq; self.recordedAt = recordedAt }
    }

    public enum Outcome: Sendable, Hashable {
        /// The body as fetched (a 304's is the body it confirmed), byte for byte.
        case response(status: Int, contentType: String, etag: String?, lastModified: String?, body: [UInt8])
        /// The fetch failed: the server's status when it answered, and why.
        case failure(status: Int?, error: String, message: String)
    }

    public var seq: UInt64
    public var recordedAt: Date
    /// The URL as fetched, its host (and port) and its path and query.
    public var url: String
    public var host: String
    public var target: String
    /// The source (stream) that fetched it and the event type that recorded it.
    public var source: String
    public var eventType: String
    public var outcome: Outcome
    public var first: Ref
    public var previous: Ref?
    public var next: Ref?
    public var last: Ref

    public init(
        seq: UInt64, recordedAt: Date, url: String, host: String, target: String, source: String, eventType: String,
        outcome: Outcome, first: Ref, previous: Ref?, next: Ref?, last: Ref
    ) {
        self.seq = seq; self.recordedAt = recordedAt; self.url = url; self.host = host; self.target = target
        self.source = source; self.eventType = eventType; self.outcome = outcome
        self.first = first; self.previous = previous; self.next = next; self.last = last
    }

    public var ref: Ref { Ref(seq: seq, recordedAt: recordedAt) }
}

/// What a URL looked like at a point.
public enum RecordingLookup: Sendable, Hashable {
    case found(Recording)
    /// Not fetched by then: `first` is when it first was, if ever.
    case notFetched(target: String, host: String?, first: Recording.Ref?)
    /// Fetched from several hosts: name one (`/_host/HOST/…`).
    case ambiguous(target: String, hosts: [String])
}
