import Foundation

/// Credentials in request headers: which headers carry them, and whether a definition holds one
/// literally (it would be stored in the log, printed and exported in plain text).
extension SourceDefinition {
    /// Whether a header carries credentials by its name: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `X-Api-Key`, or any name containing `token`, `key` or `secret`.
    public static func isCredentialHeader(_ name: String) -> Bool {
        let n = name.trimmingCharacters(in: .whitespaces).lowercased()
        return ["authorization", "proxy-authorization", "cookie", "x-api-key"].contains(n)
            || ["token", "key", "secret"].contains { n.contains($0) }
    }

    /// A header split into its name and its value as written (templates unresolved).
    static func split(header h: String) -> (name: String, value: String)? {
        guard let colon = h.firstIndex(of: ":") else { return nil }
        let name = h[..<colon].trimmingCharacters(in: .whitespaces)
        return name.isEmpty ? nil : (name, h[h.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }

    /// Whether a header value refers to something resolved at fetch time (`$VAR`, `${VAR}`,
    /// `${file:PATH}`, `${secret:NAME}`) rather than being only literal text.
    static func hasReference(_ value: String) -> Bool {
        var rest = Substring(value)
        while let dollar = rest.firstIndex(of: "$") {
            let after = rest[rest.index(after: dollar)...]
            if let c = after.first, c == "{" || c == "_" || c.isLetter { return true }
            rest = after
        }
        return false
    }

    /// The names of credential headers whose value is a literal, not a template.
    public var literalSecretHeaders: [String] {
        headers.compactMap(Self.split(header:)).filter { Self.isCredentialHeader($0.name) && !Self.hasReference($0.value) && !$0.value.isEmpty }.map(\.name)
    }

    /// The reference a literal credential is replaced with when it is kept outside the log
    /// (``SourceSecrets``): resolved at fetch time, printed as it is.
    static func secretReference(_ header: String) -> String { "${secret:\(header)}" }

    /// This definition with every literal credential header replaced by its
    /// ``secretReference(_:)``, and the literals taken out (by header name).
    public func takingLiteralSecrets() -> (definition: SourceDefinition, secrets: [String: String]) {
        var out = self
        var secrets: [String: String] = [:]
        out.headers = headers.map { h in
            guard let (name, value) = Self.split(header: h), Self.isCredentialHeader(name), !Self.hasReference(value), !value.isEmpty else { return h }
            secrets[name] = value
            return "\(name): \(Self.secretReference(name))"
        }
        return (out, secrets)
    }

    /// The definition as shown to people and exported: any literal credential (from a store
    /// defined before literals were refused) as `[hidden]`.
    public var masked: SourceDefinition {
        var out = self
        out.headers = headers.map { h in
            guard let (name, value) = Self.split(header: h), Self.isCredentialHeader(name), !Self.hasReference(value), !value.isEmpty else { return h }
            return "\(name): [hidden]"
        }
        return out
    }
}

/// Literal credentials kept outside the log: `secrets.json` in the store's directory, mode 0600,
/// one entry per source and header. Never appended, exported, pushed to a team log or printed;
/// `compact` and `rekey` carry the file along.
public struct SourceSecrets: Sendable {
    public static let fileName = "secrets.json"
    let path: String

    public init(storePath: String) { path = storePath + "/" + Self.fileName }

    /// The literal kept for `header` of `source`.
    public func value(source: String, header: String) -> String? {
        read()[source]?[header]
    }

    /// Whether any literal is kept for `source`.
    public func holds(source: String) -> Bool { read()[source] != nil }

    /// Keeps `secrets` (header → literal) for `source`, replacing what it had.
    public func keep(_ secrets: [String: String], source: String) throws(FetchError) {
        var all = read()
        all[source] = secrets.isEmpty ? nil : secrets
        do {
            let data = try JSONSerialization.data(withJSONObject: all, options: [.sortedKeys])
            let tmp = path + ".tmp"
            guard FileManager.default.createFile(atPath: tmp, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw FetchError(code: .source, message: "could not write \(tmp)", url: "")
            }
            guard rename(tmp, path) == 0 else {
                throw FetchError(code: .source, message: "could not replace \(path): \(String(cString: strerror(errno)))", url: "")
            }
        } catch let e as FetchError {
            throw e
        } catch {
            throw FetchError(code: .source, message: "could not keep the header's secret: \(error)", url: "")
        }
    }

    private func read() -> [String: [String: String]] {
        guard let d = FileManager.default.contents(atPath: path),
            let o = try? JSONSerialization.jsonObject(with: d) as? [String: [String: String]]
        else { return [:] }
        return o
    }
}
