package import StrataDomain
import EventStore
package import StrataData

extension Exchange {
    /// The exchange a stored entity holds.
    package init(_ e: ExchangeEntity) {
        let outcome: Outcome
        switch e.outcome {
        case let .response(status, text, headers, body):
            outcome = .response(status: status, statusText: text, headers: headers.map { HeaderField($0.name, $0.value) }, body: body)
        case let .failure(code, message):
            outcome = .failure(code: code, message: message)
        }
        self.init(
            seq: e.seq, method: e.method, url: e.url, requestHeaders: e.requestHeaders.map { HeaderField($0.name, $0.value) },
            requestBody: e.requestBody, startedAt: e.startedAt.date, outcome: outcome, waitMicros: e.waitMicros, totalMicros: e.totalMicros)
    }

    /// The entity to store for `source`, from `origin` (proxy, har, warc).
    package func entity(source: String, origin: String) -> ExchangeEntity {
        let out: ExchangeEntity.Outcome
        switch outcome {
        case let .response(status, text, headers, body):
            out = .response(status: status, statusText: text, headers: headers.map { HeaderLine($0.name, $0.value) }, body: body)
        case let .failure(code, message):
            out = .failure(code: code, message: message)
        }
        return ExchangeEntity(
            source: source, method: method, url: url, requestHeaders: requestHeaders.map { HeaderLine($0.name, $0.value) }, requestBody: requestBody,
            startedAt: Timestamp(startedAt), outcome: out, waitMicros: waitMicros, totalMicros: totalMicros, origin: origin)
    }
}
