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
        var raw = pool.withLock { p -> (UInt64, UInt64) in
            if p.used == p.bytes.count {
                p.bytes.withUnsafeMutableBytes { fill($0) }
                p.used = 0
            }
            defer {
                // Drawn bytes are not left behind for anyone reading the pool later.
                for i in p.used..<p.used + 16 { p.bytes[i] = 0 }
                p.used += 16
            }
            return p.bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: p.used, as: UInt64.self), $0.loadUnaligned(fromByteOffset: p.used + 8, as: UInt64.self))
            }
        }
        return withUnsafeMutableBytes(of: &raw) { b in
            b[6] = (b[6] & 0x0F) | 0x40  // version 4
            b[8] = (b[8] & 0x3F) | 0x80  // RFC 4122 variant
            let hex: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = hex.utf8Start[Int(b[i] >> 4)]
                    out[o + 1] = hex.utf8Start[Int(b[i] & 15)]
                    o += 2
                }
                return o
            }
        }
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
