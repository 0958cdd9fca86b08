import Foundation

/// Appends primitive values to a byte buffer: fixed big-endian integers (so keys sort under
/// memcmp), LEB128 varints and length-prefixed strings.
package struct ByteWriter {
    package var bytes: [UInt8]

    package init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }

    package mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }

    package mutating func varint(_ value: UInt64) { Self.varint(value) { bytes.append($0) } }

    /// The LEB128 bytes of `value`, handed to `emit` in order (also for writers into raw memory).
    @inline(__always)
    static func varint(_ value: UInt64, _ emit: (UInt8) -> Void) {
        var v = value
        while v >= 0x80 {
            emit(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        emit(UInt8(v))
    }

    package mutating func varint(_ v: Int) { varint(UInt64(v)) }

    /// A signed difference as a varint: zigzag (0, −1, 1, −2, … → 0, 1, 2, 3, …), so a small
    /// one of either sign takes a byte or two.
    package mutating func zigzag(_ v: Int64) { varint(UInt64(bitPattern: v << 1 ^ v >> 63)) }

    package mutating func raw(_ b: some Sequence<UInt8>) { bytes.append(contentsOf: b) }

    package mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u in
            varint(u.count)
            bytes.append(contentsOf: u)
        }
    }

    package mutating func blob(_ b: [UInt8]) {
        varint(b.count)
        bytes.append(contentsOf: b)
    }
}

/// Reads what ``ByteWriter`` wrote; every read is bounds-checked and throws on truncation.
package struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    package internal(set) var offset = 0

    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    package struct Truncated: Error { package init() {} }

    package var remaining: Int { buffer.count - offset }
    package var isAtEnd: Bool { offset == buffer.count }

    package mutating func u8() throws -> UInt8 {
        guard offset < buffer.count else { throw Truncated() }
        defer { offset += 1 }
        return buffer[offset]
    }

    package mutating func u64() throws -> UInt64 {
        guard remaining >= 8 else { throw Truncated() }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(buffer[offset + i]) }
        offset += 8
        return v
    }

    package mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }

    package mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try u8()
            guard shift < 64 else { throw Truncated() }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// What ``ByteWriter/zigzag(_:)`` wrote.
    package mutating func zigzag() throws -> Int64 {
        let z = try varint()
        return Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
    }

    package mutating func count(limit: Int = 1 << 30) throws -> Int {
        let v = try varint()
        guard v <= UInt64(limit), v <= UInt64(remaining) else { throw Truncated() }
        return Int(v)
    }

    package mutating func bytes(_ n: Int) throws -> [UInt8] {
        guard n >= 0, remaining >= n else { throw Truncated() }
        defer { offset += n }
        return [UInt8](UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n]))
    }

    package mutating func slice(_ n: Int) throws -> UnsafeRawBufferPointer {
        guard n >= 0, remaining >= n else { throw Truncated() }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n])
    }

    package mutating func string() throws -> String {
        let n = try count()
        return String(decoding: try slice(n), as: UTF8.self)
    }

    package mutating func blob() throws -> [UInt8] { try bytes(try count()) }
}

extension UInt64 {
    /// Runs `body` with this value's big-endian bytes without their leading zero bytes (at
    /// least one): what `ids` and `body-index` store for a seq, 2 or 3 bytes for most stores
    /// instead of 8. ``init(bigEndianBytes:)`` reads any length back, so rows of 8 read the same.
    func withShortBigEndianBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeBytes(of: bigEndian) { try body(UnsafeRawBufferPointer(rebasing: $0[Swift.min(7, leadingZeroBitCount / 8)...])) }
    }

    /// The 8 big-endian bytes of this value: sorts numerically under memcmp.
    public var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { [UInt8]($0) }
    }

    public init(bigEndianBytes b: UnsafeRawBufferPointer) {
        var v: UInt64 = 0
        for i in 0..<Swift.min(8, b.count) { v = v << 8 | UInt64(b[i]) }
        self = v
    }
}

extension Array where Element == UInt8 {
    /// Whether these are the bytes of `other` (one memcmp).
    func equals(_ other: UnsafeRawBufferPointer) -> Bool {
        count == other.count && (isEmpty || withUnsafeBytes { memcmp($0.baseAddress!, other.baseAddress!, count) == 0 })
    }

    /// Lower-case hex.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses hex (either case); nil on odd length or a non-hex digit.
    public init?(hex: String) {
        let u = Array(hex.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let h = nibble(u[i]), let l = nibble(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        self = out
    }
}
