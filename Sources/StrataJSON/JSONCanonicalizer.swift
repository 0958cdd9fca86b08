#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

extension JSONValue {
    /// The canonical bytes of a JSON text, straight from the text: the same bytes as
    /// `JSONValue(parsing: text).canonicalBytes` and the same inputs rejected, without building
    /// the tree (no dictionary, no `String` per key or value). The ingest path uses it for whole
    /// documents, which it only needs to store and compare.
    public static func canonicalize(_ text: some Collection<UInt8>) throws(JSONParseError) -> [UInt8] {
        let result: Result<[UInt8], JSONParseError> = withContiguousBytes(text) { raw in
            JSONCanonicalizer.Buffers.pooled { buffers in
                var c = JSONCanonicalizer(raw, reusing: buffers)
                defer { c.giveBack(to: buffers) }
                do throws(JSONParseError) { return .success(try c.document()) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }

    static func withContiguousBytes<R>(_ text: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let r = text.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return r }
        return Array(text).withUnsafeBytes(body)
    }

    /// Appends `bytes` (valid UTF-8) as a JSON string with canonical escaping.
    static func writeEscaped<Sink: ByteSink>(_ u: UnsafeBufferPointer<UInt8>, into out: inout Sink) {
        out.append(UInt8(ascii: "\""))
        // Copy runs that need no escaping in one go.
        var runStart = 0
        for i in 0..<u.count {
            let b = u[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            out.append(UnsafeBufferPointer(rebasing: u[runStart..<i]))
            runStart = i + 1
            out.append(92)
            switch b {
            case UInt8(ascii: "\""): out.append(34)
            case UInt8(ascii: "\\"): out.append(92)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            default:
                let hex = "0123456789abcdef".utf8
                for c in [UInt8(ascii: "u"), 48, 48, hex[hex.index(hex.startIndex, offsetBy: Int(b >> 4))],
                          hex[hex.index(hex.startIndex, offsetBy: Int(b & 15))]] { out.append(c) }
            }
        }
        out.append(UnsafeBufferPointer(rebasing: u[runStart..<u.count]))
        out.append(UInt8(ascii: "\""))
    }
}

/// Where canonical JSON bytes are written: an array, or the canonicalizer's raw buffer.
protocol ByteSink {
    mutating func append(_ byte: UInt8)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>)
}

extension Array: ByteSink where Element == UInt8 {
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) { append(contentsOf: bytes) }
}

/// Validates a JSON text with ``JSONParser``'s grammar and writes its canonical form as it goes.
/// An object's members are written in input order, then reordered by key bytes in place when they
/// were not already in order (the last of duplicate keys wins, as in the parser).
///
/// Everything is written through raw buffers owned by the canonicalizer (no array uniqueness
/// checks per byte). The canonical form is never longer than the text (whitespace goes, escapes
/// only shrink or stay, numbers and literals are copied), so the output buffer, sized to the text,
/// does not grow in practice; every write still checks it.
struct JSONCanonicalizer {
    var p: JSONParser
    /// The canonical text written so far.
    var out: Buffer<UInt8>
    /// Decoded bytes of keys that had escapes (plain keys are read where they were written).
    var escapedKeys: Buffer<UInt8>
    /// Members of the objects being written, stacked (one buffer for the whole document).
    var members: Buffer<Member>
    /// An unordered object's member texts while they are written back in key order.
    var scratch: Buffer<UInt8>

    /// A canonicalizer writing into `buffers` (emptied; `out` made as large as the text).
    init(_ b: UnsafeRawBufferPointer, reusing buffers: Buffers) {
        p = JSONParser(b)
        out = buffers.out
        escapedKeys = buffers.escapedKeys
        members = buffers.members
        scratch = buffers.scratch
        out.count = 0; escapedKeys.count = 0; members.count = 0; scratch.count = 0
        out.ensure(max(16, b.count))
    }

    /// Hands the buffers (grown, maybe) back to `buffers`, which owns them again.
    func giveBack(to buffers: Buffers) {
        buffers.out = out; buffers.escapedKeys = escapedKeys; buffers.members = members; buffers.scratch = scratch
    }

    /// A canonicalizer's buffers, kept between documents: a few per process, taken and given back
    /// around each document, so canonicalizing one allocates only its result (every ingested
    /// document is canonicalized, and four allocations a document cost more than the lock).
    final class Buffers: @unchecked Sendable {
        var out = Buffer<UInt8>(capacity: 4096)
        var escapedKeys = Buffer<UInt8>(capacity: 64)
        var members = Buffer<Member>(capacity: 64)
        var scratch = Buffer<UInt8>(capacity: 4096)

        deinit { out.deallocate(); escapedKeys.deallocate(); members.deallocate(); scratch.deallocate() }

        /// Runs `body` with buffers from the pool. Buffers grown past 1 MiB (a huge document)
        /// are not kept.
        static func pooled<T>(_ body: (Buffers) -> T) -> T {
            let buffers = pool.withLock { $0.popLast() } ?? Buffers()
            defer {
                if buffers.out.capacityInBytes <= 1 << 20, buffers.scratch.capacityInBytes <= 1 << 20 {
                    pool.withLock { if $0.count < 8 { $0.append(buffers) } }
                }
            }
            return body(buffers)
        }

        private static let pool = Mutex<[Buffers]>([])
    }

    mutating func document() throws(JSONParseError) -> [UInt8] {
        if p.b.count >= 3, p.b[0] == 0xEF, p.b[1] == 0xBB, p.b[2] == 0xBF { p.i = 3 }
        p.skipWS()
        try value()
        p.skipWS()
        guard p.i == p.b.count else { throw p.fail("unexpected data after the JSON value") }
        return Array(UnsafeBufferPointer(start: out.base, count: out.count))
    }

    mutating func value() throws(JSONParseError) {
        guard p.i < p.b.count else { throw p.fail("unexpected end of input") }
        switch p.b[p.i] {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case UInt8(ascii: "\""): _ = try string(key: false)
        case UInt8(ascii: "t"): try p.literal("true"); out.append("true")
        case UInt8(ascii: "f"): try p.literal("false"); out.append("false")
        case UInt8(ascii: "n"): try p.literal("null"); out.append("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = p.i
            try p.scanNumber()
            out.append(UnsafeRawBufferPointer(rebasing: p.b[start..<p.i]))
        default: throw p.fail("unexpected character")
        }
    }

    mutating func array() throws(JSONParseError) {
        try p.enter()
        p.i += 1
        out.append(UInt8(ascii: "["))
        p.skipWS()
        if p.i < p.b.count, p.b[p.i] == UInt8(ascii: "]") { p.i += 1; p.depth -= 1; out.append(UInt8(ascii: "]")); return }
        while true {
            p.skipWS()
            try value()
            p.skipWS()
            guard p.i < p.b.count else { throw p.fail("unexpected end of input in an array") }
            if p.b[p.i] == UInt8(ascii: ",") { p.i += 1; out.append(UInt8(ascii: ",")); continue }
            if p.b[p.i] == UInt8(ascii: "]") { p.i += 1; break }
            throw p.fail("expected ',' or ']'")
        }
        p.depth -= 1
        out.append(UInt8(ascii: "]"))
    }

    /// A member as written so far: its decoded key (in `out` for a plain key, else in
    /// `escapedKeys`) and its whole `"key":value` text in `out`.
    struct Member {
        var keyStart: Int32
        var keyCount: Int32
        var keyEscaped: Bool
        var textStart: Int
        var textEnd: Int
    }

    @inline(__always) func key(_ m: Member) -> UnsafeRawBufferPointer {
        let base = m.keyEscaped ? escapedKeys.base : out.base
        return UnsafeRawBufferPointer(start: base + Int(m.keyStart), count: Int(m.keyCount))
    }

    /// Byte order of decoded keys (RFC 8259 leaves order open; canonical form sorts by UTF-8).
    @inline(__always) static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            // Keys are mostly a few bytes: compared in place, a call to memcmp costs more.
            if n <= 16 {
                for i in 0..<n {
                    let x = pa.load(fromByteOffset: i, as: UInt8.self), y = pb.load(fromByteOffset: i, as: UInt8.self)
                    if x != y { return Int(x) - Int(y) }
                }
            } else {
                let c = memcmp(pa, pb, n)
                if c != 0 { return Int(c) }
            }
        }
        return a.count - b.count
    }

    mutating func object() throws(JSONParseError) {
        try p.enter()
        p.i += 1
        let objectStart = out.count
        let escapedStart = escapedKeys.count
        out.append(UInt8(ascii: "{"))
        p.skipWS()
        if p.i < p.b.count, p.b[p.i] == UInt8(ascii: "}") { p.i += 1; p.depth -= 1; out.append(UInt8(ascii: "}")); return }
        let base = members.count
        var ordered = true
        while true {
            p.skipWS()
            guard p.i < p.b.count, p.b[p.i] == UInt8(ascii: "\"") else { throw p.fail("expected a string key") }
            if members.count > base { out.append(UInt8(ascii: ",")) }
            let textStart = out.count
            var member = try string(key: true)
            if members.count > base, ordered {
                ordered = Self.compare(key(members[members.count - 1]), key(member)) < 0
            }
            p.skipWS()
            guard p.i < p.b.count, p.b[p.i] == UInt8(ascii: ":") else { throw p.fail("expected ':'") }
            p.i += 1
            p.skipWS()
            out.append(UInt8(ascii: ":"))
            try value()
            member.textStart = textStart
            member.textEnd = out.count
            members.append(member)
            p.skipWS()
            guard p.i < p.b.count else { throw p.fail("unexpected end of input in an object") }
            if p.b[p.i] == UInt8(ascii: ",") { p.i += 1; continue }
            if p.b[p.i] == UInt8(ascii: "}") { p.i += 1; break }
            throw p.fail("expected ',' or '}'")
        }
        p.depth -= 1
        if !ordered { reorder(base, from: objectStart + 1) }
        out.append(UInt8(ascii: "}"))
        escapedKeys.count = escapedStart
        members.count = base
    }

    /// Rewrites the object's members (`members[base...]`, written from `start`) in key order,
    /// keeping the last of equal keys.
    mutating func reorder(_ base: Int, from start: Int) {
        var list = UnsafeMutableBufferPointer(start: members.base + base, count: members.count - base)
        // Stable by construction: equal keys keep input order (text offsets grow with it).
        let plain = UnsafePointer(out.base), escaped = UnsafePointer(escapedKeys.base)
        @inline(__always) func key(_ m: Member) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: (m.keyEscaped ? escaped : plain) + Int(m.keyStart), count: Int(m.keyCount))
        }
        @inline(__always) func less(_ a: Member, _ b: Member) -> Bool {
            let c = Self.compare(key(a), key(b))
            return c < 0 || (c == 0 && a.textStart < b.textStart)
        }
        if list.count <= 16 {
            for i in 1..<list.count {
                let m = list[i]
                var j = i
                while j > 0, less(m, list[j - 1]) { list[j] = list[j - 1]; j -= 1 }
                list[j] = m
            }
        } else {
            list.sort(by: less)
        }
        // Of equal keys (adjacent, in input order) only the last is kept: the others are marked
        // now, while their key bytes are still in `out`.
        for n in 0..<(list.count - 1) where Self.compare(key(list[n + 1]), key(list[n])) == 0 { list[n].keyCount = -1 }
        // The members' texts move to scratch and come back in order.
        scratch.count = 0
        scratch.append(UnsafeRawBufferPointer(start: out.base + start, count: out.count - start))
        out.count = start
        var first = true
        for n in 0..<list.count {
            let m = list[n]
            if m.keyCount < 0 { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UnsafeRawBufferPointer(start: scratch.base + (m.textStart - start), count: m.textEnd - m.textStart))
        }
    }

    /// Reads the string at the cursor (validated as the parser does) and writes it canonically,
    /// returning where its decoded bytes are (for a key). A string without escapes is its own
    /// canonical form (no quote, backslash or control character in it), so it is copied.
    mutating func string(key: Bool) throws(JSONParseError) -> Member {
        if let (s, ascii) = try p.scanPlainString() {
            guard ascii || JSONParser.isValidUTF8(s) else { throw p.fail("invalid UTF-8 in a string") }
            out.append(UInt8(ascii: "\""))
            let at = out.count
            out.append(s)
            out.append(UInt8(ascii: "\""))
            return Member(keyStart: Int32(truncatingIfNeeded: at), keyCount: Int32(truncatingIfNeeded: s.count), keyEscaped: false, textStart: 0, textEnd: 0)
        }
        let decoded = Array(try p.parseString().utf8)
        let at = escapedKeys.count
        decoded.withUnsafeBufferPointer { d in
            if key { escapedKeys.append(UnsafeRawBufferPointer(d)) }
            JSONValue.writeEscaped(d, into: &out)
        }
        return Member(keyStart: Int32(truncatingIfNeeded: at), keyCount: Int32(truncatingIfNeeded: decoded.count), keyEscaped: true, textStart: 0, textEnd: 0)
    }
}

/// A growable buffer of trivial values, written without copy-on-write checks; its owner frees it.
struct Buffer<Element: BitwiseCopyable> {
    private(set) var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    var count = 0

    var capacityInBytes: Int { capacity * MemoryLayout<Element>.stride }

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    func deallocate() { base.deallocate() }

    subscript(i: Int) -> Element { base[i] }

    /// Makes room for `n` more elements.
    @inline(__always) mutating func ensure(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }

    mutating func grow(_ needed: Int) {
        let c = max(needed, capacity * 2)
        let b = UnsafeMutablePointer<Element>.allocate(capacity: c)
        b.update(from: base, count: count)
        base.deallocate()
        base = b
        capacity = c
    }

    @inline(__always) mutating func append(_ e: Element) {
        ensure(1)
        base[count] = e
        count += 1
    }
}

extension Buffer: ByteSink where Element == UInt8 {
    @inline(__always) mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) { append(UnsafeRawBufferPointer(bytes)) }

    @inline(__always) mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        ensure(bytes.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: src, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always) mutating func append(_ word: StaticString) {
        append(UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
    }
}

extension JSONValue {
    /// Checks that `text` is one JSON value (the parser's grammar, limits and rejections) without
    /// building anything: for bodies that are only stored, whose validity must be known first.
    public static func validate(_ text: some Collection<UInt8>) throws(JSONParseError) {
        let result: JSONParseError? = withContiguousBytes(text) { raw in
            var p = JSONParser(raw)
            do throws(JSONParseError) { try p.skipDocument(); return nil } catch { return error }
        }
        if let result { throw result }
    }
}

extension JSONParser {
    mutating func skipDocument() throws(JSONParseError) {
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { i = 3 }
        skipWS()
        try skipValue()
        skipWS()
        guard i == b.count else { throw fail("unexpected data after the JSON value") }
    }

    mutating func skipValue() throws(JSONParseError) {
        guard i < b.count else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = b[i] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let isObject = close == UInt8(ascii: "}")
            try enter()
            i += 1
            skipWS()
            if i < b.count, b[i] == close { i += 1; depth -= 1; return }
            while true {
                skipWS()
                if isObject {
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    try skipString()
                    skipWS()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    i += 1
                    skipWS()
                }
                try skipValue()
                skipWS()
                guard i < b.count else { throw fail(isObject ? "unexpected end of input in an object" : "unexpected end of input in an array") }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == close { i += 1; break }
                throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            }
            depth -= 1
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try scanNumber()
        default: throw fail("unexpected character")
        }
    }

    /// Moves past a string, validated as ``parseString()`` does (escapes through it).
    mutating func skipString() throws(JSONParseError) {
        if let (s, ascii) = try scanPlainString() {
            guard ascii || Self.isValidUTF8(s) else { throw fail("invalid UTF-8 in a string") }
            return
        }
        _ = try parseString()
    }
}
