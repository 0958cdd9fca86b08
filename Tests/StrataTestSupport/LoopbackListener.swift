import Foundation

/// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for the test servers that
/// run on raw sockets (``FaultyProxy``, ``WebhookReceiver``).
enum LoopbackListener {
    /// The listening socket and its port.
    static func open() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }
}

/// A loopback port nothing listens on at the moment of asking (the kernel's pick for port 0), for
/// a command that takes a port and refuses 0. A random pick can be another test's server.
public func freeLoopbackPort() throws -> Int {
    let (fd, port) = try LoopbackListener.open()
    close(fd)
    return port
}
