import Crypto
import Foundation

/// Keeps credentials out of the log: the values of `Authorization`, `Cookie`,
/// `Proxy-Authorization`, `X-Api-Key` (and any header named on the command line) become
/// `[redacted:` + the first 12 hex digits of HMAC-SHA256(key, lower-cased name + ":" + value)
/// + `]` before an exchange is stored. Equal credentials stay equal (a session is still
/// recognisable), and nothing of the value can be read back. The key is the store's own
/// (``EventStore/redactionKey()``), never exported.
public struct CredentialMask: Sendable {
    public static let always: Set<String> = ["authorization", "cookie", "proxy-authorization", "x-api-key", "set-cookie"]

    /// The key's bytes (`SymmetricKey` is not `Sendable`).
    private let key: [UInt8]
    private let names: Set<String>

    /// `key`: the store's redaction key (``EventStore/redactionKey()``); `extra` names more
    /// headers to mask, any case.
    public init(key: [UInt8], extra: [String] = []) {
        self.key = key
        names = Self.always.union(extra.map { $0.lowercased() })
    }

    public func masks(_ name: String) -> Bool { names.contains(name.lowercased()) }

    /// `lines` with every credential's value replaced by its placeholder.
    public func mask(_ lines: [HeaderLine]) -> [HeaderLine] {
        lines.map { line in
            guard masks(line.name), !Self.isPlaceholder(line.value) else { return line }
            return HeaderLine(line.name, placeholder(name: line.name, value: line.value))
        }
    }

    public func placeholder(name: String, value: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array((name.lowercased() + ":" + value).utf8), using: SymmetricKey(data: key))
        return "[redacted:" + mac.prefix(6).map { String(format: "%02x", $0) }.joined() + "]"
    }

    /// Whether `value` is already a placeholder (an import of an export keeps it as it is).
    public static func isPlaceholder(_ value: String) -> Bool {
        value.hasPrefix("[redacted:") && value.hasSuffix("]") && value.utf8.count == 23
    }
}
