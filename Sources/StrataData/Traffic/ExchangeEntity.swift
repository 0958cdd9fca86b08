public import EventStore
import Foundation

/// One header line as it was sent: the name's spelling kept.
public struct HeaderLine: Sendable, Hashable, Codable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// The first value of `name` (any case) in `lines`.
    public static func value(_ name: String, in lines: [HeaderLine]) -> String? {
        lines.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// One HTTP exchange as stored: what a client asked (credentials already masked) and what it was
/// answered, or why no answer came. Built by `strata proxy`, HAR and WARC imports; read back for
/// replay and the HAR and WARC exports (which also turn fetched pages, details and images into
/// exchanges).
public struct ExchangeEntity: Sendable, Hashable {
    /// How the exchange ended.
    public enum Outcome: Sendable, Hashable {
        /// `body` nil: recorded without a body (a HAR entry that kept none).
        case response(status: Int, statusText: String?, headers: [HeaderLine], body: [UInt8]?)
        /// No complete answer: a connection failure, a timeout, a cut body.
        case failure(code: String, message: String)
    }

    /// The event's seq (0 before it is stored) and id.
    public var seq: UInt64 = 0
    public var id: String?
    public var source: String
    public var method: String
    public var url: String
    public var httpVersion: String
    public var requestHeaders: [HeaderLine]
    public var requestBody: [UInt8]?
    /// When the request started (a HAR's `startedDateTime`, a WARC's `WARC-Date`).
    public var startedAt: Timestamp
    public var outcome: Outcome
    /// Time to the first byte of the answer, and the whole exchange.
    public var waitMicros: Int64?
    public var totalMicros: Int64
    /// Where it came from: `proxy`, `har`, `warc`, or `fetch` for a fetched page, detail or image.
    public var origin: String
    /// The event type it came from (exports of fetched recordings).
    public var eventType: String = TrafficEvents.exchangeRecorded

    public init(
        id: String? = nil, source: String, method: String, url: String, httpVersion: String = "HTTP/1.1", requestHeaders: [HeaderLine],
        requestBody: [UInt8]?, startedAt: Timestamp, outcome: Outcome, waitMicros: Int64? = nil, totalMicros: Int64, origin: String
    ) {
        self.id = id; self.source = source; self.method = method; self.url = url; self.httpVersion = httpVersion
        self.requestHeaders = requestHeaders; self.requestBody = requestBody; self.startedAt = startedAt; self.outcome = outcome
        self.waitMicros = waitMicros; self.totalMicros = totalMicros; self.origin = origin
    }

    public var status: Int? {
        if case .response(let status, _, _, _) = outcome { return status }
        return nil
    }
    public var responseBody: [UInt8]? {
        if case .response(_, _, _, let body) = outcome { return body }
        return nil
    }
}
