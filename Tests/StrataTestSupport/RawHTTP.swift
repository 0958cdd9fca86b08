import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 client over a plain loopback socket (`Connection: close`), so tests see
/// every header as the server sent it, and can read a stream (Server-Sent Events) as it arrives.
public struct RawResponse: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public var seq: UInt64? { header("Strata-Seq").flatMap(UInt64.init) }
    public var text: String { String(decoding: body, as: UTF8.self) }
    public var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]) ?? [:] }
    public var jsonArray: [[String: Any]] { ((try? JSONSerialization.jsonObject(with: Data(body))) as? [[String: Any]]) ?? [] }
    /// `Link` targets by relation.
    public var links: [String: String] {
        var out: [String: String] = [:]
        for part in (header("Link") ?? "").components(separatedBy: ", <") {
            let p = part.hasPrefix("<") ? String(part.dropFirst()) : part
            guard let end = p.firstIndex(of: ">"), let rel = p.range(of: "rel=\"") else { continue }
            out[String(p[rel.upperBound...].prefix { $0 != "\"" })] = String(p[..<end])
        }
        return out
    }
}

public struct RawHTTPError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// One connection to 127.0.0.1:`port`.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket failed") }
        // A generous bound on a stalled server, not a timing: with the whole suite running on two
        // cores, a small request to `strata serve` in process has waited more than 10 s.
        var tv = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw RawHTTPError(description: "connect to \(port) failed") }
    }

    deinit { close(fd) }

    public func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws {
        // A request may name another host (a test of how the server treats one).
        let host = headers.contains { $0.0.lowercased() == "host" } ? "" : "Host: 127.0.0.1\r\n"
        var head = "\(method) \(path) HTTP/1.1\r\n\(host)Connection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError(description: "send failed") }
            sent += n
        }
    }

    /// More bytes, or false at the end of the stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw RawHTTPError(description: "recv failed or timed out (errno \(errno))") }
        if n == 0 { return false }
        buffer += chunk[..<n]
        return true
    }

    /// The status line and headers.
    public func readHead() throws -> (status: Int, headers: [String: String]) {
        while true {
            if let r = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) {
                let head = String(decoding: buffer[..<r], as: UTF8.self).components(separatedBy: "\r\n")
                buffer.removeFirst(r + 4)
                let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
                var headers: [String: String] = [:]
                for line in head.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased(), value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    headers[name] = headers[name].map { $0 + ", " + value } ?? value
                }
                return (status, headers)
            }
            guard try fill() else { throw RawHTTPError(description: "the connection closed before the headers ended") }
        }
    }

    /// The body: by Content-Length, chunked, or up to the close.
    public func readBody(_ headers: [String: String], method: String) throws -> [UInt8] {
        if method == "HEAD" { return [] }
        if let length = headers["content-length"].flatMap(Int.init) {
            while buffer.count < length { guard try fill() else { break } }
            return Array(buffer.prefix(length))
        }
        while try fill() {}
        guard headers["transfer-encoding"]?.lowercased() == "chunked" else { return buffer }
        var out: [UInt8] = [], rest = buffer[...]
        while let crlf = rest.indices.dropLast().first(where: { rest[$0] == 13 && rest[rest.index(after: $0)] == 10 }),
            let size = Int(String(decoding: rest[..<crlf], as: UTF8.self), radix: 16), size > 0
        {
            let start = crlf + 2
            out += rest[start..<min(rest.endIndex, start + size)]
            rest = rest[min(rest.endIndex, start + size + 2)...]
        }
        return out
    }

    /// Reads (a stream) until `text` has arrived, up to `seconds`; returns all read so far.
    public func read(until text: String, seconds: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while !String(decoding: buffer, as: UTF8.self).contains(text) {
            guard Date() < deadline, try fill() else { break }
        }
        return String(decoding: buffer, as: UTF8.self)
    }
}

public enum RawHTTP {
    /// One request on its own connection (on a thread of its own: the socket calls block).
    public static func request(_ base: String, _ path: String, method: String = "GET", headers: [(String, String)] = [], body: String = "") async throws
        -> RawResponse
    {
        let port = Int(base.split(separator: ":").last ?? "") ?? 0
        return try await withCheckedThrowingContinuation { c in
            Thread {
                c.resume(
                    with: Result {
                        let conn = try RawConnection(port: port)
                        try conn.send(method, path, headers: headers, body: Array(body.utf8))
                        let (status, h) = try conn.readHead()
                        return RawResponse(status: status, headers: h, body: try conn.readBody(h, method: method))
                    })
            }.start()
        }
    }
}
