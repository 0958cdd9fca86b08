public import EventStore
import Foundation
import StrataJSON

/// The one way into the log for what a source's data can carry. Every writer path passes its
/// bodies through its source's gate before anything is hashed or appended: a fetch's list pages
/// and details, snapshot imports from files and git, recorded traffic (the proxy, HAR, WARC), the
/// server's answers to pushed writes, and local writes themselves. The gate redacts the source's
/// paths (``Redactor``), masks credentials and the source's headers in recorded traffic
/// (``CredentialMask``), and refuses a local write that would put a redacted value in the log.
///
/// A gate is opened with the store's redaction key confirmed against the history's record of it
/// (``RedactionKeyLedger/confirmedKey()``): a store holding another key than the team's is
/// refused before any request is made.
public struct IngestGate: Sendable {
    /// The source's redaction: nil for a source that redacts no path and records no traffic.
    let redactor: Redactor?
    let source: String

    /// The gate of `source`'s fetches, imports and writes.
    public static func of(_ source: SourceDefinition, store: EventStore) async throws -> IngestGate {
        guard let paths = source.redact, !paths.isEmpty else { return IngestGate(redactor: nil, source: source.name) }
        let key = try await RedactionKeyLedger(store: store).confirmedKey()
        return IngestGate(redactor: Redactor(key: key, paths: paths, headers: source.redactHeaders ?? []), source: source.name)
    }

    /// The gate of recorded traffic into `source` (nil: not defined yet, as a first recording
    /// makes it): credentials always masked, the source's header names and `extraHeaders` too,
    /// and its paths redacted.
    public static func traffic(_ source: SourceDefinition?, named name: String, extraHeaders: [String], store: EventStore) async throws -> IngestGate {
        let key = try await RedactionKeyLedger(store: store).confirmedKey()
        let redactor = Redactor(key: key, paths: source?.redact ?? [], headers: (source?.redactHeaders ?? []) + extraHeaders)
        return IngestGate(redactor: redactor, source: name)
    }

    /// The gate of bodies restated from the log (a page a snapshot import repeats): they passed
    /// their gate when they were stored, and pass again as they are.
    public static func restating(_ source: SourceDefinition) -> IngestGate { IngestGate(redactor: nil, source: source.name) }

    /// The paths and key a stored body was redacted under (``Redactor/fingerprint``); nil when
    /// nothing is redacted.
    public var fingerprint: String? { redactor?.fingerprint }

    /// A list body, its items' paths redacted (at `items`, dotted; nil: the body is the list).
    /// - Throws: ``FetchError`` (`malformedJSON`) when the source redacts and the body is not
    ///   JSON: what cannot be read cannot be redacted, so it is not stored.
    public func list(_ body: [UInt8], items: String?, url: String) throws(FetchError) -> [UInt8] {
        guard let redactor else { return body }
        return try redactor.list(body, items: items, url: url)
    }

    /// A document (a detail, a server's answer to a write), its paths redacted from its root.
    /// - Throws: ``FetchError`` (`malformedJSON`) when the source redacts and the body is not JSON.
    public func document(_ body: [UInt8], url: String) throws(FetchError) -> [UInt8] {
        guard let redactor else { return body }
        return try redactor.document(body, url: url)
    }

    /// A server's answer to a write as it may be stored: redacted when it is JSON; when the source
    /// redacts and the answer cannot be read, not stored at all (nil).
    public func answer(_ body: [UInt8], url: String) -> [UInt8]? {
        guard !body.isEmpty else { return nil }
        guard redactor != nil else { return body }
        return try? document(body, url: url)
    }

    /// A document value as it may be stored (a server's version of an item in a conflict).
    public func document(_ value: JSONValue) -> JSONValue {
        guard redactor != nil, let bytes = try? document(value.canonicalBytes, url: ""), let out = try? JSONValue(parsing: bytes) else { return value }
        return out
    }

    /// Whether the gate redacts anything: a server's free text (an error message that may quote
    /// a value) is then not stored.
    public var redacts: Bool { !(redactor?.json.isEmpty ?? true) }

    /// An exchange as recorded: credentials and the source's headers masked, its JSON bodies
    /// redacted (``Redactor/recorded(_:headers:)``).
    public func exchange(_ exchange: ExchangeEntity) -> ExchangeEntity {
        guard let redactor else { return exchange }
        var x = exchange
        x.requestHeaders = redactor.headers.mask(x.requestHeaders)
        if let body = x.requestBody { (x.requestBody, x.requestHeaders) = redactor.recorded(body, headers: x.requestHeaders) }
        if case let .response(status, text, headers, body) = x.outcome {
            var masked = redactor.headers.mask(headers)
            var stored = body
            if let body { (stored, masked) = redactor.recorded(body, headers: masked) }
            x.outcome = .response(status: status, statusText: text, headers: masked, body: stored)
        }
        return x
    }

    /// Refuses a local write to `source` that would store a value at a redacted path: a created
    /// document holding one, or an operation on one. Its value would enter the log as typed (a
    /// write is sent as it was written, so it cannot be stored redacted). Needs no key: it only
    /// reads the source's paths.
    /// - Throws: ``Refusal``.
    public static func admit(_ source: SourceDefinition, document: JSONValue?, ops: [PatchOperation] = []) throws(Refusal) {
        let paths = JSONRedaction(paths: source.redact ?? []).paths
        guard !paths.isEmpty else { return }
        let source = source.name
        // A pointer reaches a redacted path when one leads to the other (array indices aside:
        // a path reaches into every element); removing a value stores none.
        func redacted(_ pointer: String) -> [String]? {
            let parts = ((try? JSONPointer(pointer))?.tokens ?? []).filter { !$0.allSatisfy(\.isNumber) || $0.isEmpty }
            return paths.first { p in parts.starts(with: p) || (!parts.isEmpty && p.starts(with: parts)) }
        }
        for op in ops where op.op != .remove {
            if let p = redacted(op.path) { throw Refusal(source: source, path: p.joined(separator: ".")) }
        }
        if let document {
            for p in paths where !document.values(atPath: p.joined(separator: ".")).isEmpty {
                throw Refusal(source: source, path: p.joined(separator: "."))
            }
        }
    }

    /// A local write the gate refuses: it would put a redacted value in the log.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var source: String
        public var path: String
        public var description: String {
            "\(source) redacts \(path): its values never enter the log, so a local write cannot set it (edit it at the API itself)"
        }
    }
}
