import Crypto
public import EventStore
import Foundation

/// A source's redaction at ingest: the values at its `redact` paths become
/// `"[redacted:" + the first 12 hex digits of HMAC-SHA256(store key, path + value) + "]"` before
/// a body is hashed or stored (the value as canonical JSON: `"ann@example.com"` with its quotes), and
/// its `redactHeaders` join the credentials ``CredentialMask`` masks in recorded traffic. Equal
/// values give equal placeholders and a changed value a changed one, so history, dedupe and
/// `verify` work on the redacted bodies as they would on the originals; only the key's holders
/// could test a guess. The key is the team's (``RedactionKeyLedger``): every node redacting one
/// history holds the same, so equal values give equal placeholders on every node.
public struct Redactor: Sendable {
    private let key: [UInt8]
    public let json: JSONRedaction
    public let headers: CredentialMask

    public init(key: [UInt8], paths: [String], headers: [String] = []) {
        self.key = key
        json = JSONRedaction(paths: paths)
        self.headers = CredentialMask(key: key, extra: headers)
    }

    /// The paths and the key, as 16 hex digits (FNV-1a over the paths sorted and the key's
    /// check): a body stored under other paths, or before the key rotated, is asked for again
    /// whole rather than confirmed by a 304 (``Fetcher``'s conditional requests), so its values
    /// are stored again as they are redacted now.
    public var fingerprint: String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        let text = json.paths.map({ $0.joined(separator: ".") }).sorted().joined(separator: "\u{1}") + "\u{2}" + RedactionKeyLedger.check(key)
        for byte in text.utf8 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }

    public func placeholder(path: String, value: JSONValue) -> String {
        // The value as canonical JSON: a string keeps its quotes, so "5" and 5 differ.
        let message = Array(path.utf8) + value.canonicalBytes
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return "[redacted:" + mac.prefix(6).map { String(format: "%02x", $0) }.joined() + "]"
    }

    /// A list body with the paths redacted in each of its items (at `items`, dotted; nil: the
    /// body is the list); the body itself when no path is in it.
    /// - Throws: ``FetchError`` (`malformedJSON`) when the body is not JSON: what cannot be read
    ///   cannot be redacted, so it is not stored.
    public func list(_ body: [UInt8], items: String?, url: String) throws(FetchError) -> [UInt8] {
        try redact(body, scope: .items(at: items.map { $0.split(separator: ".").map(String.init) } ?? []), url: url)
    }

    /// A detail (or a recorded JSON response) with the paths redacted from its root.
    /// - Throws: ``FetchError`` (`malformedJSON`) when the body is not JSON.
    public func document(_ body: [UInt8], url: String) throws(FetchError) -> [UInt8] {
        try redact(body, scope: .document, url: url)
    }

    /// The most a compressed recorded body is decoded to, to be read for the paths.
    static let inflatedLimit = 64 << 20

    /// A recorded body (a request's or a response's) and its headers, with the paths redacted from
    /// the body's root when it is JSON. A body with a `Content-Encoding` (`gzip`, `deflate`, `br`,
    /// `zstd`, or several) is decoded to be read: when a path is found there, the body is kept
    /// redacted and decoded, and its headers lose `Content-Encoding` and give the new
    /// `Content-Length`, so no compressed copy of a redacted value is stored and a replay serves
    /// what the headers say. A body no path reaches, or one that cannot be decoded or read, is
    /// kept as it came, with its headers.
    public func recorded(_ body: [UInt8], headers: [HeaderLine]) -> (body: [UInt8], headers: [HeaderLine]) {
        guard !json.isEmpty, !body.isEmpty else { return (body, headers) }
        let encodings = ContentDecoding.encodings(headers)
        guard !encodings.isEmpty else {
            return ((try? json.redact(body, scope: .document, keep: CredentialMask.isPlaceholder, placeholder: placeholder)) ?? body, headers)
        }
        guard let plain = try? ContentDecoding.decode(body, encodings: encodings, limit: Self.inflatedLimit),
            let redacted = try? json.redact(plain, scope: .document, keep: CredentialMask.isPlaceholder, placeholder: placeholder)
        else { return (body, headers) }
        let hadLength = headers.contains { $0.name.lowercased() == "content-length" }
        var out = headers.filter { !["content-encoding", "content-length"].contains($0.name.lowercased()) }
        if hadLength { out.append(HeaderLine("Content-Length", String(redacted.count))) }
        return (redacted, out)
    }

    private func redact(_ body: [UInt8], scope: JSONRedaction.Scope, url: String) throws(FetchError) -> [UInt8] {
        do {
            return try json.redact(body, scope: scope, keep: CredentialMask.isPlaceholder, placeholder: placeholder) ?? body
        } catch {
            throw FetchError(
                code: .malformedJSON,
                message: "\(error); the source redacts fields, so a body that cannot be read is not stored", url: url)
        }
    }
}
