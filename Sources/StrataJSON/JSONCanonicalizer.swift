extension JSONValue {
    /// The canonical bytes of a JSON text, straight from the text: the same bytes as
    /// `JSONValue(parsing: text).canonicalBytes` and the same inputs rejected, without building
    /// the tree (no dictionary, no `String` per key or value). The ingest path uses it for whole
    /// documents, which it only needs to store and compare.
    public static func canonicalize(_ text: some Collection<UInt8>) throws(JSONParseError) -> [UInt8] {
        let result: Result<[UInt8], JSONParseError> = withContiguousBytes(text) { raw in
            var c = JSONCanonicalizer(raw)
            do throws(JSONParseError) { return .success(try c.document()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    static func withContiguousBytes<R>(_ text: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let r = text.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return r }
        return Array(text).withUnsafeBytes(body)
    }

    /// Appends `bytes` (valid UTF-8) as a JSON string with canonical escaping.
    static func writeEscaped(_ u: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Copy runs that need no escaping in one go.
        var runStart = 0
        for i in 0..<u.count {
            let b = u[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<i]))
            runStart = i + 1
            switch b {
            case UInt8(ascii: "\""): out.append(92); out.append(34)
            case UInt8(ascii: "\\"): out.append(92); out.append(92)
            case 0x0A: out.append(92); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(92); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(92); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(92); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(92); out.append(UInt8(ascii: "f"))
            default:
                let hex = "0123456789abcdef".utf8
                out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48,
                                        hex[hex.index(hex.startIndex, offsetBy: Int(b >> 4))],
                                        hex[hex.index(hex.startIndex, offsetBy: Int(b & 15))]])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<u.count]))
        out.append(UInt8(ascii: "\""))
    }
}

/// Validates a JSON text with ``JSONParser``'s grammar and writes its canonical form as it goes.
/// An object's members are written in input order, then reordered by key bytes in place when they
/// were not already in order (the last of duplicate keys wins, as in the parser).
struct JSONCanonicalizer {
    var p: JSONParser
    var out: [UInt8] = []
    /// Decoded key bytes of the objects being written, stacked: members refer to ranges in it.
    var keys: [UInt8] = []
    var scratch: [UInt8] = []
    /// Members of the objects being written, stacked (one allocation for the whole document).
    var members: [Member] = []
    var order: [Int] = []

    init(_ b: UnsafeRawBufferPointer) {
        p = JSONParser(b)
        out.reserveCapacity(b.count)
    }

    mutating func document() throws(JSONParseError) -> [UInt8] {
        if p.b.count >= 3, p.b[0] == 0xEF, p.b[1] == 0xBB, p.b[2] == 0xBF { p.i = 3 }
        p.skipWS()
        try value()
        p.skipWS()
        guard p.i == p.b.count else { throw p.fail("unexpected data after the JSON value") }
        return out
    }

    mutating func value() throws(JSONParseError) {
        guard p.i < p.b.count else { throw p.fail("unexpected end of input") }
        switch p.b[p.i] {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case UInt8(ascii: "\""): try string(keep: false)
        case UInt8(ascii: "t"): try p.literal("true"); out.append(contentsOf: "true".utf8)
        case UInt8(ascii: "f"): try p.literal("false"); out.append(contentsOf: "false".utf8)
        case UInt8(ascii: "n"): try p.literal("null"); out.append(contentsOf: "null".utf8)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = p.i
            try p.scanNumber()
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: p.b[start..<p.i]))
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

    /// A member as written so far: its key in `keys`, its whole `"key":value` text in `out`.
    struct Member {
        var key: Range<Int>
        var text: Range<Int>
    }

    mutating func object() throws(JSONParseError) {
        try p.enter()
        p.i += 1
        let objectStart = out.count
        let keysStart = keys.count
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
            let keyStart = keys.count
            try string(keep: true)
            let key = keyStart..<keys.count
            if members.count > base, ordered {
                let last = members[members.count - 1]
                ordered = keys.withUnsafeBufferPointer { k in
                    UnsafeBufferPointer(rebasing: k[last.key]).lexicographicallyPrecedes(UnsafeBufferPointer(rebasing: k[key]))
                }
            }
            p.skipWS()
            guard p.i < p.b.count, p.b[p.i] == UInt8(ascii: ":") else { throw p.fail("expected ':'") }
            p.i += 1
            p.skipWS()
            out.append(UInt8(ascii: ":"))
            try value()
            members.append(Member(key: key, text: textStart..<out.count))
            p.skipWS()
            guard p.i < p.b.count else { throw p.fail("unexpected end of input in an object") }
            if p.b[p.i] == UInt8(ascii: ",") { p.i += 1; continue }
            if p.b[p.i] == UInt8(ascii: "}") { p.i += 1; break }
            throw p.fail("expected ',' or '}'")
        }
        p.depth -= 1
        if !ordered { reorder(base, from: objectStart + 1) }
        out.append(UInt8(ascii: "}"))
        keys.removeSubrange(keysStart...)
        members.removeSubrange(base...)
    }

    /// Rewrites the object's members (`members[base...]`, written from `start`) in key order,
    /// keeping the last of equal keys.
    mutating func reorder(_ base: Int, from start: Int) {
        let all = keys, list = members
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: base..<list.count)
        all.withUnsafeBufferPointer { k in
            order.sort { a, b in
                let ka = UnsafeBufferPointer(rebasing: k[list[a].key]), kb = UnsafeBufferPointer(rebasing: k[list[b].key])
                if ka.elementsEqual(kb) { return a < b }
                return ka.lexicographicallyPrecedes(kb)
            }
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: out[start...])
        out.removeSubrange(start...)
        var first = true
        let sorted = order, written = scratch
        all.withUnsafeBufferPointer { k in
            for (n, m) in sorted.enumerated() {
                // Of equal keys (adjacent, in input order) only the last is kept.
                if n + 1 < sorted.count, UnsafeBufferPointer(rebasing: k[list[sorted[n + 1]].key]).elementsEqual(UnsafeBufferPointer(rebasing: k[list[m].key])) { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                let text = list[m].text
                written.withUnsafeBufferPointer { out.append(contentsOf: UnsafeBufferPointer(rebasing: $0[(text.lowerBound - start)..<(text.upperBound - start)])) }
            }
        }
    }

    /// Reads the string at the cursor (validated as the parser does) and writes it canonically; a
    /// key (`keep`) also goes to `keys`, decoded, for ordering. A string without escapes is its
    /// own canonical form (no quote, backslash or control character in it), so it is copied.
    mutating func string(keep: Bool) throws(JSONParseError) {
        if let (s, ascii) = try p.scanPlainString() {
            guard ascii || JSONParser.isValidUTF8(s) else { throw p.fail("invalid UTF-8 in a string") }
            if keep { keys.append(contentsOf: s) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: s)
            out.append(UInt8(ascii: "\""))
            return
        }
        let decoded = Array(try p.parseString().utf8)
        if keep { keys.append(contentsOf: decoded) }
        decoded.withUnsafeBufferPointer { JSONValue.writeEscaped($0, into: &out) }
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
