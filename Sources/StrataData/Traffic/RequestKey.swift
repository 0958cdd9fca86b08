import Crypto
import Foundation

/// What a recorded exchange is found by on replay: the method, the path and query, and the
/// request body's digest where there was a body.
///
/// A GET without a body is its target alone (`/cars?page=2`), the key a fetched page has, so a
/// proxied GET and a fetched page of one URL are one history. Anything else is
/// `METHOD target` and, with a body, ` sha256:` and the first 16 hex digits of its SHA-256
/// (`POST /orders sha256:3f2a…`). A target starts with `/`, so the two forms never meet.
public enum RequestKey {
    public static func make(method: String, target: String, body: [UInt8]?) -> String {
        make(method: method, target: target, bodyDigest: body.flatMap { $0.isEmpty ? nil : bodyDigest($0) })
    }

    /// The same from the body's digest (``bodyDigest(_:)``), as an exchange's event keeps it.
    public static func make(method: String, target: String, bodyDigest digest: String?) -> String {
        let method = method.uppercased()
        guard let digest else { return method == "GET" ? target : method + " " + target }
        return method + " " + target + " sha256:" + String(digest.prefix(16))
    }

    /// The SHA-256 of a request body, lower-case hex.
    public static func bodyDigest(_ body: [UInt8]) -> String {
        SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()
    }
}
