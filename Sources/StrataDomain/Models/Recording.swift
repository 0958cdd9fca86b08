package import Foundation

/// A response Strata recorded for a URL: what the API answered at one fetch, to be served again.
package struct Recording: Sendable, Hashable {
    /// Where another recording of the same URL sits.
    package struct Ref: Sendable, Hashable {
        package var seq: UInt64
        package var recordedAt: Date
        package init(seq: UInt64, recordedAt: Date) { self.seq = seq; self.recordedAt = recordedAt }
    }

    package enum Outcome: Sendable, Hashable {
        /// The body as fetched (a 304's is the body it confirmed), byte for byte.
        case response(status: Int, contentType: String, etag: String?, lastModified: String?, body: [UInt8])
        /// The fetch failed: the server's status when it answered, and why.
        case failure(status: Int?, error: String, message: String)
        /// A recorded exchange's answer (`strata proxy`, HAR, WARC): the status, headers and body
        /// as they came, whatever the status.
        case exchange(status: Int, headers: [HeaderField], body: [UInt8])
        /// Erased since (`strata forget`): the seq of the erasure and its reason; no body.
        case erased(seq: UInt64, reason: String)
    }

    package var seq: UInt64
    package var recordedAt: Date
    /// The URL as fetched, its host (and port) and its path and query.
    package var url: String
    package var host: String
    package var target: String
    /// The source (stream) that fetched it and the event type that recorded it.
    package var source: String
    package var eventType: String
    package var outcome: Outcome
    package var first: Ref
    package var previous: Ref?
    package var next: Ref?
    package var last: Ref

    package init(
        seq: UInt64, recordedAt: Date, url: String, host: String, target: String, source: String, eventType: String,
        outcome: Outcome, first: Ref, previous: Ref?, next: Ref?, last: Ref
    ) {
        self.seq = seq; self.recordedAt = recordedAt; self.url = url; self.host = host; self.target = target
        self.source = source; self.eventType = eventType; self.outcome = outcome
        self.first = first; self.previous = previous; self.next = next; self.last = last
    }

    package var ref: Ref { Ref(seq: seq, recordedAt: recordedAt) }
}

/// What a URL looked like at a point.
package enum RecordingLookup: Sendable, Hashable {
    case found(Recording)
    /// Not fetched by then: `first` is when it first was, if ever.
    case notFetched(target: String, host: String?, first: Recording.Ref?)
    /// Fetched from several hosts: name one (`/_host/HOST/…`).
    case ambiguous(target: String, hosts: [String])
}
