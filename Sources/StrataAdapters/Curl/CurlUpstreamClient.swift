package import StrataDomain
package import Foundation
package import StrataData

/// ``UpstreamClient`` over the app's libcurl client in pass-through mode: the request as the
/// client sent it (less the hop-by-hop headers), no redirect followed, the body as it came.
package struct CurlUpstreamClient: UpstreamClient {
    let http: any HTTPClient
    /// Seconds a whole exchange may take, and the largest body taken.
    let timeout: Double
    let maxBytes: Int

    package init(http: any HTTPClient, timeout: Double = 60, maxBytes: Int = 256 << 20) {
        self.http = http
        self.timeout = timeout
        self.maxBytes = maxBytes
    }

    /// Headers that concern one connection, not the exchange (RFC 9110 §7.6.1), and those libcurl
    /// sets from the request itself.
    package static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect"
    ]

    package func forward(_ request: ForwardRequest, to upstream: String, startedAt: Date) async -> Exchange {
        let url = Self.join(upstream, request.target)
        var r = HTTPRequest(
            url: url, method: request.method, body: request.body,
            headers: request.headers.filter { !Self.hopByHop.contains($0.name.lowercased()) }.map { ($0.name, $0.value) },
            timeout: request.timeout ?? timeout,
            maxBytes: maxBytes)
        r.passThrough = true
        let clock = ContinuousClock.now
        do {
            let response = try await http.send(r)
            let headers = response.headerLines.filter { !Self.hopByHop.contains($0.name.lowercased()) || $0.name.lowercased() == "content-length" }
            return Exchange(
                method: request.method, url: url, requestHeaders: request.headers, requestBody: request.body, startedAt: startedAt,
                outcome: .response(status: response.status, statusText: nil, headers: headers.map { HeaderField($0.name, $0.value) }, body: response.body),
                waitMicros: response.waited.map(Self.micros), totalMicros: Self.micros(response.duration))
        } catch let e as FetchError {
            return Exchange(
                method: request.method, url: url, requestHeaders: request.headers, requestBody: request.body, startedAt: startedAt,
                outcome: .failure(code: e.code.description, message: e.message), totalMicros: Self.micros(ContinuousClock.now - clock))
        } catch {
            return Exchange(
                method: request.method, url: url, requestHeaders: request.headers, requestBody: request.body, startedAt: startedAt,
                outcome: .failure(code: "other", message: "\(error)"), totalMicros: Self.micros(ContinuousClock.now - clock))
        }
    }

    /// `https://api.example/v1` + `/cars?x=1` → `https://api.example/v1/cars?x=1`.
    package static func join(_ base: String, _ target: String) -> String {
        var b = Substring(base)
        while b.hasSuffix("/") { b = b.dropLast() }
        return String(b) + (target.hasPrefix("/") ? target : "/" + target)
    }

    static func micros(_ d: Duration) -> Int64 { d.components.seconds * 1_000_000 + d.components.attoseconds / 1_000_000_000_000 }
}
