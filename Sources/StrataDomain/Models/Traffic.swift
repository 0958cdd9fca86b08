package import Foundation

/// One header line, its name spelled as it was sent.
package struct HeaderField: Sendable, Hashable {
    package var name: String
    package var value: String
    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

extension [HeaderField] {
    /// The first value of `name`, in any case.
    package func value(_ name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.count == wanted.count && $0.name.lowercased() == wanted }?.value
    }
}

/// A request as a client sent it to `strata proxy` (or to `strata serve` on a miss): what is
/// forwarded upstream.
package struct ForwardRequest: Sendable, Hashable {
    package var method: String
    /// The path and query, as sent (`/cars?page=2`).
    package var target: String
    package var headers: [HeaderField]
    package var body: [UInt8]?
    /// Seconds the whole exchange may take (nil: the client's default).
    package var timeout: Double?
    package init(method: String, target: String, headers: [HeaderField], body: [UInt8]?, timeout: Double? = nil) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// One recorded exchange: what a client asked and what it got, or why it got nothing.
package struct Exchange: Sendable, Hashable {
    package enum Outcome: Sendable, Hashable {
        /// `body` nil: recorded without one.
        case response(status: Int, statusText: String?, headers: [HeaderField], body: [UInt8]?)
        /// No complete answer came: `code` is connection, timeout, tls, truncated, tooLarge…
        case failure(code: String, message: String)
    }

    /// Its seq in the log (0 before it is stored).
    package var seq: UInt64
    package var method: String
    package var url: String
    package var requestHeaders: [HeaderField]
    package var requestBody: [UInt8]?
    package var startedAt: Date
    package var outcome: Outcome
    /// Time to the answer's first byte, and the whole exchange, in microseconds.
    package var waitMicros: Int64?
    package var totalMicros: Int64

    package init(
        seq: UInt64 = 0, method: String, url: String, requestHeaders: [HeaderField], requestBody: [UInt8]?, startedAt: Date, outcome: Outcome,
        waitMicros: Int64? = nil, totalMicros: Int64
    ) {
        self.seq = seq; self.method = method; self.url = url; self.requestHeaders = requestHeaders; self.requestBody = requestBody
        self.startedAt = startedAt; self.outcome = outcome; self.waitMicros = waitMicros; self.totalMicros = totalMicros
    }

    package var status: Int? {
        if case .response(let s, _, _, _) = outcome { return s }
        return nil
    }
}

/// The archive formats traffic goes in and out of.
package enum TrafficFormat: String, Sendable, Hashable, CaseIterable {
    /// HTTP Archive 1.2 (browsers' devtools, mitmproxy, Charles).
    case har
    /// Web ARChive 1.0/1.1 (wget, web crawlers, web-archive players).
    case warc
}

/// What an import of a HAR or WARC file did.
package struct TrafficImport: Sendable, Hashable {
    package var source: String
    package var format: TrafficFormat
    package var exchanges: Int
    package var appended: Int
    package var records: Int
    /// Records with no exchange in them, by WARC type.
    package var skipped: [String: Int]
    package var unresolvedRevisits: Int
    package var bytes: Int64
    package var seconds: Double
    package init(
        source: String, format: TrafficFormat, exchanges: Int, appended: Int, records: Int, skipped: [String: Int], unresolvedRevisits: Int,
        bytes: Int64, seconds: Double
    ) {
        self.source = source; self.format = format; self.exchanges = exchanges; self.appended = appended; self.records = records
        self.skipped = skipped; self.unresolvedRevisits = unresolvedRevisits; self.bytes = bytes; self.seconds = seconds
    }
}

/// What an export to HAR or WARC wrote.
package struct TrafficExport: Sendable, Hashable {
    package var source: String
    package var format: TrafficFormat
    package var path: String
    package var throughSeq: UInt64
    package var exchanges: Int
    /// Exchanges that got no answer (kept by HAR as status 0; WARC has no form for them).
    package var failures: Int
    package var records: Int
    package var bytes: Int64
    package init(
        source: String, format: TrafficFormat, path: String, throughSeq: UInt64, exchanges: Int, failures: Int, records: Int, bytes: Int64
    ) {
        self.source = source; self.format = format; self.path = path; self.throughSeq = throughSeq; self.exchanges = exchanges
        self.failures = failures; self.records = records; self.bytes = bytes
    }
}

/// A point of the log where what a source recorded changed: the end of a fetch run that brought
/// a new answer, or a recorded exchange.
package struct ChangePoint: Sendable, Hashable {
    package enum Kind: String, Sendable, Hashable { case fetchRun = "fetch run", exchange }
    /// The point to read at: the run's last event, or the exchange's.
    package var seq: UInt64
    package var observedAt: Date
    package var source: String
    package var kind: Kind
    /// The fetch run's id, or the exchange's request (`GET /cars`).
    package var label: String
    package init(seq: UInt64, observedAt: Date, source: String, kind: Kind, label: String) {
        self.seq = seq; self.observedAt = observedAt; self.source = source; self.kind = kind; self.label = label
    }
}

/// A recorded answer that differs between two points.
package struct ResponseChange: Sendable, Hashable {
    package var source: String
    /// `GET https://api.example/cars?page=1`.
    package var request: String
    package var seq: UInt64
    package var status: Int?
    /// The answer in force before: its seq and status (nil: there was none).
    package var previousSeq: UInt64?
    package var previousStatus: Int?
    package var bodyChanged: Bool
    package init(source: String, request: String, seq: UInt64, status: Int?, previousSeq: UInt64?, previousStatus: Int?, bodyChanged: Bool) {
        self.source = source; self.request = request; self.seq = seq; self.status = status; self.previousSeq = previousSeq
        self.previousStatus = previousStatus; self.bodyChanged = bodyChanged
    }
}
