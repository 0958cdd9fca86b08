import Foundation
import Synchronization

/// A TCP proxy on 127.0.0.1 (an ephemeral port) in front of a unix socket, for partition
/// schedules: ``cut()`` drops every open connection at once (both ends see it closed), ``stall()``
/// stops moving bytes without closing anything (a network that silently loses packets; the
/// kernel's buffers fill and the peers wait), ``restore()`` moves them again. Threads of its own,
/// so it keeps working while the test awaits a child process.
public final class FaultyProxy: Sendable {
    public let port: Int
    private let listener: Int32
    private let target: String
    private struct State {
        var stalled = false
        var cuts = 0
        var stopped = false
        var connections = 0
    }
    private let state = Mutex(State())

    /// - Parameter socketPath: the unix socket connections are forwarded to.
    public init(to socketPath: String) throws {
        target = socketPath
        let (fd, port) = try LoopbackListener.open()
        self.port = port
        listener = fd
        Thread { [self] in acceptLoop() }.start()
    }

    /// Every open connection closed now; new ones are accepted.
    public func cut() { state.withLock { $0.cuts += 1 } }
    /// No byte moves until ``restore()``.
    public func stall() { state.withLock { $0.stalled = true } }
    public func restore() { state.withLock { $0.stalled = false } }
    /// Connections accepted so far.
    public var connections: Int { state.withLock { $0.connections } }

    public func stop() {
        state.withLock {
            $0.stopped = true; $0.cuts += 1
        }
    }

    deinit {
        stop()
        close(listener)
    }

    private func acceptLoop() {
        while !state.withLock({ $0.stopped }) {
            var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            let server = connectUnix(target)
            guard server >= 0 else { close(client); continue }
            let generation = state.withLock { s in
                s.connections += 1; return s.cuts
            }
            Thread { [self] in pump(client, server, generation) }.start()
        }
    }

    private func connectUnix(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if ok != 0 { close(fd); return -1 }
        return fd
    }

    /// Moves bytes both ways until either end closes or the connection is cut.
    private func pump(_ a: Int32, _ b: Int32, _ generation: Int) {
        defer { close(a); close(b) }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let (stalled, cuts) = state.withLock { ($0.stalled, $0.cuts) }
            if cuts != generation { return }
            if stalled { usleep(10_000); continue }
            var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 50) > 0 else { continue }
            for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[from].fd, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                var sent = 0
                while sent < n {
                    let w = buffer.withUnsafeBytes { send(fds[to].fd, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                    if w <= 0 { return }
                    sent += w
                }
            }
        }
    }
}
