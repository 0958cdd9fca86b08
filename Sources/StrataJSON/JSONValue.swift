internal import CStrataJSON

/// A JSON value that keeps numbers as their source text (no float rounding) and serializes
/// canonically: object keys sorted by UTF-8 bytes, no insignificant whitespace. Two documents
/// with the same canonical bytes are the same document.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number's JSON text, validated against the JSON grammar.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text (RFC 8259), rejecting trailing garbage, bad escapes, invalid UTF-8,
    /// leading zeros and nesting deeper than 512.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let array = Array(bytes)
        let result: Result<JSONValue, JSONParseError> = array.withUnsafeBytes { raw in
            var p = JSONParser(raw)
            do throws(JSONParseError) { return .success(try p.parseDocument()) } catch { return .failure(error) }
        }
        self = try result.get()
    }

    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }

    /// Canonical bytes: sorted keys, no whitespace.
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out, pretty: false, indent: 0)
        return out
    }

    public var canonicalString: String { String(decoding: canonicalBytes, as: UTF8.self) }

    /// Indented, sorted-key text for people.
    public var prettyString: String {
        var out: [UInt8] = []
        write(into: &out, pretty: true, indent: 0)
        return String(decoding: out, as: UTF8.self)
    }

    /// The value at a dotted path (`results`, `sprites.front_default`, `moves.0.move.name`);
    /// an empty path is the value itself.
    public func value(atPath path: String) -> JSONValue? {
        guard !path.isEmpty else { return self }
        var current = self
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            switch current {
            case .object(let o):
                guard let next = o[String(part)] else { return nil }
                current = next
            case .array(let a):
                guard let i = Int(part), a.indices.contains(i) else { return nil }
                current = a[i]
            default:
                return nil
            }
        }
        return current
    }

    /// A scalar's text (strings unquoted); nil for containers and null.
    public var scalarText: String? {
        switch self {
        case .null, .array, .object: nil
        default: displayText
        }
    }

    /// A short text for a scalar (strings unquoted), or the canonical JSON of a container.
    public var displayText: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return n
        case .string(let s): return s
        default: return canonicalString
        }
    }

    private func write(into out: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                v.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty && !a.isEmpty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (i, m) in Self.sortedMembers(o).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                Self.writeString(m.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(UInt8(ascii: " ")) }
                m.value.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty && !o.isEmpty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// An object's keys in canonical order (by UTF-8 bytes).
    public static func sortedKeys(_ o: [String: JSONValue]) -> [String] {
        o.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// An object's members in canonical order (by their keys' UTF-8 bytes): sorted as pairs, so
    /// no key is looked up again to find its value.
    public static func sortedMembers(_ o: [String: JSONValue]) -> [(key: String, value: JSONValue)] {
        o.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    private static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeEscaped($0, into: &out) }
    }
}

/// Why a JSON text was rejected, with the byte offset.
public struct JSONParseError: Error, Sendable, CustomStringConvertible, Equatable {
    public var offset: Int
    public var reason: String
    public var description: String { "malformed JSON at byte \(offset): \(reason)" }
}

struct JSONParser {
    let b: UnsafeRawBufferPointer
    var i = 0
    var depth = 0
    static let maxDepth = 512

    init(_ b: UnsafeRawBufferPointer) { self.b = b }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

    /// Inlined with a fast exit: compact JSON has no whitespace between tokens, and this runs
    /// around every one of them.
    @inline(__always) mutating func skipWS() {
        guard i < b.count, b[i] <= 0x20 else { return }
        skipWhitespaceRun()
    }

    mutating func skipWhitespaceRun() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // A UTF-8 byte order mark is tolerated.
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { i = 3 }
        skipWS()
        let v = try parseValue()
        skipWS()
        guard i == b.count else { throw fail("unexpected data after the JSON value") }
        return v
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard i < b.count else { throw fail("unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard b.count - i >= n else { throw fail("unexpected end of input") }
        let p = word.utf8Start
        for k in 0..<n where b[i + k] != p[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > Self.maxDepth { throw fail("nesting deeper than \(Self.maxDepth)") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var o: [String: JSONValue] = [:]
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; depth -= 1; return .object(o) }
        while true {
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let k = try parseString()
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipWS()
            // Duplicate keys: the last one wins, as in most parsers.
            o[k] = try parseValue()
            skipWS()
            guard i < b.count else { throw fail("unexpected end of input in an object") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(o)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        var a: [JSONValue] = []
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; depth -= 1; return .array(a) }
        while true {
            skipWS()
            a.append(try parseValue())
            skipWS()
            guard i < b.count else { throw fail("unexpected end of input in an array") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(a)
    }

    mutating func parseNumber() throws(JSONParseError) -> String {
        let start = i
        try scanNumber()
        return String(decoding: UnsafeRawBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
    }

    /// Moves past a number, validating it against the JSON grammar.
    mutating func scanNumber() throws(JSONParseError) {
        if b[i] == UInt8(ascii: "-") { i += 1 }
        func digit(_ k: Int) -> Bool { k < b.count && b[k] >= 48 && b[k] <= 57 }
        guard digit(i) else { throw fail("invalid number") }
        if b[i] == 48 {
            i += 1
            if digit(i) { throw fail("leading zero in a number") }
        } else {
            while digit(i) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { throw fail("invalid fraction") }
            while digit(i) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digit(i) else { throw fail("invalid exponent") }
            while digit(i) { i += 1 }
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard b.count - i >= 4 else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 97...102: d = UInt32(c - 87)
            case 65...70: d = UInt32(c - 55)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    /// A string from UTF-8 bytes, or nil if they are not valid UTF-8. ASCII needs no check;
    /// otherwise the bytes are checked in C first (the generic `String(validating:as:)`'s
    /// metadata lookups dominated parsing, and comparing a decoded string's `utf8` view with the
    /// input byte by byte was 17% of importing pages of non-ASCII text).
    static func string(_ bytes: UnsafeRawBufferPointer, ascii: Bool) -> String? {
        guard ascii || isValidUTF8(bytes) else { return nil }
        return String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return strata_utf8_valid(base.assumingMemoryBound(to: UInt8.self), bytes.count) != 0
    }

    /// Moves past a string that has no escapes, returning its raw bytes and whether they are all
    /// ASCII (not yet checked as UTF-8); at the first backslash, moves back to the opening quote
    /// and returns nil, so the caller decodes escapes with ``parseString()``.
    mutating func scanPlainString() throws(JSONParseError) -> (bytes: UnsafeRawBufferPointer, ascii: Bool)? {
        let open = i
        i += 1
        let start = i
        let high = skipPlainRun()
        guard i < b.count else { throw fail("unterminated string") }
        switch b[i] {
        case UInt8(ascii: "\""):
            let s = UnsafeRawBufferPointer(rebasing: b[start..<i])
            i += 1
            return (s, !high)
        case UInt8(ascii: "\\"):
            i = open
            return nil
        default:
            throw fail("control character in a string")
        }
    }

    /// Moves `i` to the next quote, backslash or control character (or the end): eight bytes at
    /// a time while none of them is one, the word that has one byte by byte. Returns whether a
    /// byte on the way is not ASCII. The run between a string's escapes, or all of a plain one.
    @inline(__always) mutating func skipPlainRun() -> Bool {
        var high: UInt64 = 0
        if let base = b.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while i + 8 <= b.count {
                let v = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5C)
                let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((v &- ones &* 0x20) & ~v)
                if special & highs != 0 { break }
                high |= v
                i += 8
            }
            high &= highs
        }
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { break }
            if c >= 0x80 { high = 1 }
            i += 1
        }
        return high != 0
    }

    mutating func parseString() throws(JSONParseError) -> String {
        if let (s, ascii) = try scanPlainString() {
            guard let str = Self.string(s, ascii: ascii) else { throw fail("invalid UTF-8 in a string") }
            return str
        }
        i += 1
        var out: [UInt8] = []
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                guard let str = out.withUnsafeBytes({ Self.string($0, ascii: false) }) else { throw fail("invalid UTF-8 in a string") }
                return str
            }
            if c < 0x20 { throw fail("control character in a string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { break }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(34)
            case UInt8(ascii: "\\"): out.append(92)
            case UInt8(ascii: "/"): out.append(47)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard b.count - i >= 6, b[i] == 92, b[i + 1] == UInt8(ascii: "u") else { throw fail("unpaired surrogate") }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("unpaired surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }
}
