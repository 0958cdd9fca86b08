#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Random (version 4) UUIDs in lower-case text: the id of an event that was given none.
///
/// The same ids `UUID().uuidString.lowercased()` makes, from the same kernel generator, but drawn
/// 4 KiB at a time: `UUID()` makes one `getrandom` system call per id, about 3 µs here, which a
/// fetch paid for every detail it appended.
public enum RandomID {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private static let pool = Mutex(Pool())

    public static func uuid() -> String {
        var b: [UInt8] = pool.withLock { p in
            if p.used == p.bytes.count {
                p.bytes.withUnsafeMutableBytes { fill($0) }
                p.used = 0
            }
            defer {
                // Drawn bytes are not left behind for anyone reading the pool later.
                for i in p.used..<p.used + 16 { p.bytes[i] = 0 }
                p.used += 16
            }
            return Array(p.bytes[p.used..<p.used + 16])
        }
        b[6] = (b[6] & 0x0F) | 0x40  // version 4
        b[8] = (b[8] & 0x3F) | 0x80  // RFC 4122 variant
        var text = Array(b.hex.utf8)
        for at in [20, 16, 12, 8] { text.insert(UInt8(ascii: "-"), at: at) }
        return String(decoding: text, as: UTF8.self)
    }

    /// Fills `buffer` from the kernel's generator: one read of `/dev/urandom` (the source
    /// `getrandom` draws from) for the whole pool; 8 bytes at a time from the system generator
    /// where that device cannot be read.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var done = 0
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            while done < buffer.count {
                let n = read(fd, buffer.baseAddress! + done, buffer.count - done)
                if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { break }
            }
        }
        var generator = SystemRandomNumberGenerator()
        while done < buffer.count {
            withUnsafeBytes(of: generator.next()) { r in
                let n = min(r.count, buffer.count - done)
                UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + n]).copyMemory(from: UnsafeRawBufferPointer(rebasing: r[0..<n]))
                done += n
            }
        }
    }
}
