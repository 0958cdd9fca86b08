#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

/// Time-ordered (version 7, RFC 9562) UUIDs in lower-case text: the id of an event that was
/// given none. 48 bits of Unix time in milliseconds, then 74 random bits.
///
/// Time-ordered because every id goes into the `ids` index: random (version 4) ids land on
/// random leaves of it, so each commit rewrote a page per event once the index outgrew a few
/// pages, more as the log grew; these land at its right edge, a few pages per commit. The random
/// bits come from the kernel's generator drawn 4 KiB at a time: `UUID()` makes one `getrandom`
/// system call per id, and a fetch appends an id for every detail. The time never goes back
/// within a process, even when the wall clock does.
public enum RandomID {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
        /// The newest millisecond handed out.
        var milliseconds: UInt64 = 0
    }

    private static let pool = Mutex(Pool())

    public static func uuid() -> String {
        var b: [UInt8] = pool.withLock { p in
            if p.used == p.bytes.count {
                p.bytes.withUnsafeMutableBytes { fill($0) }
                p.used = 0
            }
            p.milliseconds = max(p.milliseconds, UInt64(max(0, SystemClock().now().microseconds / 1000)))
            var b = Array(p.bytes[p.used..<p.used + 16])
            // Drawn bytes are not left behind for anyone reading the pool later.
            for i in p.used..<p.used + 16 { p.bytes[i] = 0 }
            p.used += 16
            for i in 0..<6 { b[i] = UInt8(truncatingIfNeeded: p.milliseconds >> (40 - 8 * UInt64(i))) }
            return b
        }
        b[6] = (b[6] & 0x0F) | 0x70  // version 7
        b[8] = (b[8] & 0x3F) | 0x80  // RFC 9562 variant
        var text = Array(b.hex.utf8)
        for at in [20, 16, 12, 8] { text.insert(UInt8(ascii: "-"), at: at) }
        return String(decoding: text, as: UTF8.self)
    }

    /// Fills `buffer` from the kernel's generator: one read of `/dev/urandom` (the source
    /// `getrandom` draws from) for the whole pool; 8 bytes at a time from the system generator
    /// where that device cannot be read.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
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
