import Foundation
import Synchronization

/// A webhook receiver on 127.0.0.1 (an ephemeral port): a real HTTP/1.1 server (keep-alive,
/// `Content-Length` bodies) that records every request it is sent and answers with ``status``
/// (set it to 503 for a receiver that is down, 200 when it is back). Threads of its own, so it
/// keeps answering while the test awaits a child process.
public final class WebhookReceiver: Sendable {
    public struct Request: Sendable, Hashable {
        public var method: String
        public var path: String
        /// Header names lower-cased.
        public var headers: [String: String]
        public var body: [UInt8]
        /// The status it was answered with.
        public var answered: Int

        public var idempotencyKey: String? { headers["idempotency-key"] }
        public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }
    }

    public let port: Int
    public var url: String { "http://127.0.0.1:\(port)/hook" }
    private let listener: Int32
    private struct State {
        var status = 200
        var delay = 0
        var requests: [Request] = []
        var stopped = false
    }
    private let state = Mutex(State())

    public init() throws {
        let (fd, port) = try LoopbackListener.open()
        self.port = port
        listener = fd
        Thread { [self] in acceptLoop() }.start()
    }

    /// The status every request is answered with from now on.
    public var status: Int {
        get { state.withLock { $0.status } }
        set { state.withLock { $0.status = newValue } }
    }

    /// Milliseconds each answer waits after the request is recorded: a receiver that has the
    /// notification while its sender may die before it hears back.
    public var delay: Int {
        get { state.withLock { $0.delay } }
        set { state.withLock { $0.delay = newValue } }
    }

    /// Every request so far, in the order they arrived.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// The requests answered 2xx.
    public var accepted: [Request] { requests.filter { (200..<300).contains($0.answered) } }

    public func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        stop()
        close(listener)
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopped }) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func fill() -> Bool {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }
        while true {
            // The head, up to the blank line.
            var end: Int?
            while end == nil {
                end = Self.find([13, 10, 13, 10], in: buffer)
                if end == nil, !fill() { return }
            }
            let head = String(decoding: buffer[0..<end!], as: UTF8.self)
            buffer.removeFirst(end! + 4)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            var headers: [String: String] = [:]
            for l in lines {
                guard let colon = l.firstIndex(of: ":") else { continue }
                headers[l[..<colon].lowercased()] = l[l.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < length { if !fill() { return } }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            let (status, delay) = state.withLock { s in
                s.requests.append(
                    Request(
                        method: requestLine.first.map(String.init) ?? "", path: requestLine.count > 1 ? String(requestLine[1]) : "", headers: headers,
                        body: body, answered: s.status))
                return (s.status, s.delay)
            }
            if delay > 0 { usleep(useconds_t(delay * 1000)) }
            let response = Array("HTTP/1.1 \(status) \(status < 300 ? "OK" : "Unavailable")\r\nContent-Length: 0\r\n\r\n".utf8)
            let written = response.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written != response.count { return }
        }
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
