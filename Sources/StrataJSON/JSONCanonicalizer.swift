internal import CStrataJSON

extension JSONValue {
    /// The canonical bytes of a JSON text, straight from the text: the bytes of
    /// `JSONValue(parsing: text).canonicalBytes` (except that keys differing only in Unicode
    /// normalization stay two members: keys are compared by their bytes) and the same inputs
    /// rejected, with the parser's error. The ingest and fetch paths run every stored document
    /// through it; it is C (`strata_json_canonicalize`, Sources/CStrataJSON), one pass without a
    /// tree. The rejection's offset and reason come from ``validate(_:)``.
    public static func canonicalize(_ text: some Collection<UInt8>) throws(JSONParseError) -> [UInt8] {
        let result: Result<[UInt8], JSONParseError> = withContiguousBytes(text) { raw in
            var written = 0
            let out = [UInt8](unsafeUninitializedCapacity: max(raw.count, 1)) { buffer, count in
                if let base = raw.baseAddress, let outBase = buffer.baseAddress {
                    written = strata_json_canonicalize(base.assumingMemoryBound(to: UInt8.self), raw.count, outBase)
                } else {
                    written = Int(STRATA_JSON_INVALID)  // an empty text
                }
                count = max(written, 0)
            }
            if written >= 0 { return .success(out) }
            precondition(written != Int(STRATA_JSON_NO_MEMORY), "out of memory canonicalizing a JSON text of \(raw.count) bytes")
            var p = JSONParser(raw)
            do throws(JSONParseError) { try p.skipDocument() } catch { return .failure(error) }
            // The parser accepts what the canonicalizer rejected: a defect, caught in debug builds;
            // a release build still stores the document, in the tree's canonical form.
            assertionFailure("the canonicalizer rejected a text the parser accepts")
            do throws(JSONParseError) { return .success(try JSONValue(parsing: raw).canonicalBytes) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The canonical form of `text` (``canonicalize(_:)``) written to `out`, which has room for
    /// `text.count` bytes (the form is never longer), and its length; nil when the text is not
    /// JSON (``canonicalize(_:)`` then says why). For callers that keep many forms in one block.
    public static func canonicalize(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        precondition(out.count >= text.count, "the output needs room for the whole text")
        guard let base = text.baseAddress, let outBase = out.baseAddress else { return nil }
        let written = strata_json_canonicalize(base.assumingMemoryBound(to: UInt8.self), text.count, outBase.assumingMemoryBound(to: UInt8.self))
        precondition(written != Int(STRATA_JSON_NO_MEMORY), "out of memory canonicalizing a JSON text of \(text.count) bytes")
        return written >= 0 ? written : nil
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
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<u.count]))
        out.append(UInt8(ascii: "\""))
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

    /// Moves past a string, validated as ``parseString()`` does, without decoding it: the runs
    /// between escapes are checked as UTF-8 in place and the escapes by their grammar. Anything
    /// wrong is handed to ``parseString()`` from the opening quote, for its error and offset.
    mutating func skipString() throws(JSONParseError) {
        let open = i
        if let (s, ascii) = try scanPlainString() {
            guard ascii || Self.isValidUTF8(s) else { throw fail("invalid UTF-8 in a string") }
            return
        }
        if skipEscapedString() { return }
        i = open
        _ = try parseString()
    }

    /// Moves past the string at `i` (its opening quote) and returns true when it is valid; false
    /// (leaving `i` anywhere) when it is not.
    private mutating func skipEscapedString() -> Bool {
        i += 1
        var run = i
        var high = false
        func runIsValid(_ end: Int) -> Bool {
            !high || Self.isValidUTF8(UnsafeRawBufferPointer(rebasing: b[run..<end]))
        }
        while i < b.count {
            if skipPlainRun() { high = true }
            guard i < b.count else { return false }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                guard runIsValid(i) else { return false }
                i += 1
                return true
            }
            if c < 0x20 { return false }
            if c >= 0x80 { high = true }
            guard c == UInt8(ascii: "\\") else { i += 1; continue }
            guard runIsValid(i), i + 1 < b.count else { return false }
            let e = b[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                UInt8(ascii: "r"), UInt8(ascii: "t"):
                break
            case UInt8(ascii: "u"):
                guard let scalar = try? hex4() else { return false }
                if (0xD800...0xDBFF).contains(scalar) {
                    guard b.count - i >= 6, b[i] == 92, b[i + 1] == UInt8(ascii: "u") else { return false }
                    i += 2
                    guard let low = try? hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    return false
                }
            default:
                return false
            }
            run = i
            high = false
        }
        return false
    }
}
