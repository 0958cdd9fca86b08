/// Where the parts of a JSON text are, found without building a ``JSONValue`` tree: for a list
/// body whose items are a minority of its bytes (long side arrays, page metadata), checking the
/// text and finding each item's bytes costs a fraction of building the whole body.
///
/// Paths are read as ``JSONValue/value(atPath:)`` reads them (dotted, empty segments dropped, an
/// array's segment an index), and duplicate keys resolve as the parser resolves them: the last
/// one wins.
public enum JSONSpans {
    /// The container at a path.
    public enum Container: Equatable, Sendable {
        /// An array: each element's byte range, in order.
        case array([Range<Int>])
        /// An object: each member's key and its value's byte range, the last of equal keys kept,
        /// in the order of first appearance.
        case object([Member])
        /// Not a container.
        case scalar
    }

    public struct Member: Equatable, Sendable {
        public var key: String
        public var range: Range<Int>
    }

    /// Checks that `text` is one JSON value (as ``JSONValue/validate(_:)``), then finds the value
    /// at `path`: nil when the path leads nowhere.
    /// - Throws: ``JSONParseError`` when the text is not JSON.
    public static func container(atPath path: String, in text: UnsafeRawBufferPointer) throws(JSONParseError) -> Container? {
        var p = JSONParser(text)
        try p.skipDocument()
        p.i = text.count >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF ? 3 : 0
        p.skipWS()
        guard try p.follow(path) else { return nil }
        return try p.container()
    }

    /// The scalar at `path` inside `text`, a valid JSON value (checked before: a range
    /// ``container(atPath:in:)`` returned): a string's decoded text or a number's text as written;
    /// nil when the path leads nowhere or to a container, `true`, `false` or `null`.
    public static func scalar(atPath path: String, in text: UnsafeRawBufferPointer) throws(JSONParseError) -> Scalar? {
        var p = JSONParser(text)
        p.skipWS()
        guard try p.follow(path), p.i < text.count else { return nil }
        switch text[p.i] {
        case UInt8(ascii: "\""): return .string(try p.parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try p.parseNumber())
        default: return nil
        }
    }

    /// The byte ranges of the objects that are elements of a list anywhere in `text`, in order:
    /// the outermost only (an object inside a listed object is part of it). What a body's window
    /// of versions keeps once each (a page's items, and the entries of its side lists).
    /// - Throws: ``JSONParseError`` when the text is not JSON.
    public static func listedObjects(in text: UnsafeRawBufferPointer) throws(JSONParseError) -> [Range<Int>] {
        var p = JSONParser(text)
        try p.skipDocument()
        p.i = text.count >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF ? 3 : 0
        p.skipWS()
        p.depth = 0
        var out: [Range<Int>] = []
        try p.listedObjects(into: &out)
        return out
    }

    public enum Scalar: Equatable, Sendable {
        case string(String)
        case number(String)
    }
}

extension JSONParser {
    /// Moves to the value at a dotted path from the value at `i`, in a text known to be valid;
    /// false when there is none.
    mutating func follow(_ path: String) throws(JSONParseError) -> Bool {
        for part in path.split(separator: ".") {
            guard let next = try child(part) else { return false }
            i = next
        }
        return true
    }

    /// Where the member `part` of the object at `i` (the last of equal keys), or element
    /// `Int(part)` of the array at `i`, starts; nil when there is none.
    mutating func child(_ part: Substring) throws(JSONParseError) -> Int? {
        guard i < b.count else { return nil }
        switch b[i] {
        case UInt8(ascii: "{"):
            var found: Int?
            try members { key, range in
                if key == part { found = range.lowerBound }
            }
            return found
        case UInt8(ascii: "["):
            guard let index = Int(part), index >= 0 else { return nil }
            var n = 0, found: Int?
            try elements { range in
                if n == index { found = range.lowerBound }
                n += 1
                return found == nil
            }
            return found
        default:
            return nil
        }
    }

    /// The container at `i`, moving past it.
    mutating func container() throws(JSONParseError) -> JSONSpans.Container {
        guard i < b.count else { return .scalar }
        switch b[i] {
        case UInt8(ascii: "{"):
            var ranges: [String: Range<Int>] = [:]
            var order: [String] = []
            try members { key, range in
                if ranges[key] == nil { order.append(key) }
                ranges[key] = range
            }
            return .object(order.map { JSONSpans.Member(key: $0, range: ranges[$0]!) })
        case UInt8(ascii: "["):
            var out: [Range<Int>] = []
            try elements { range in
                out.append(range)
                return true
            }
            return .array(out)
        default:
            return .scalar
        }
    }

    /// Adds the listed objects of the value at `i` of a valid text to `out`
    /// (``JSONSpans/listedObjects(in:)``), moving past it.
    mutating func listedObjects(into out: inout [Range<Int>]) throws(JSONParseError) {
        guard i < b.count, b[i] == UInt8(ascii: "{") || b[i] == UInt8(ascii: "[") else {
            let d = depth
            try skipValue()
            depth = d
            return
        }
        let isObject = b[i] == UInt8(ascii: "{")
        try enter()
        defer { depth -= 1 }
        i += 1
        skipWS()
        if i < b.count, b[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
            i += 1
            return
        }
        while i < b.count {
            skipWS()
            if isObject {
                try skipString()
                skipWS()
                i += 1  // ':'
                skipWS()
                try listedObjects(into: &out)
            } else if i < b.count, b[i] == UInt8(ascii: "{") {
                let start = i, d = depth
                try skipValue()
                depth = d
                out.append(start..<i)
            } else {
                try listedObjects(into: &out)
            }
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: ",") else { break }
            i += 1
        }
        i += 1  // '}' or ']'
    }

    /// Calls `body` with each member's key and its value's range, for the object at `i` of a
    /// valid text, moving past it.
    private mutating func members(_ body: (String, Range<Int>) -> Void) throws(JSONParseError) {
        i += 1
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return }
        while i < b.count {
            skipWS()
            let key = try parseString()
            skipWS()
            i += 1  // ':'
            skipWS()
            let start = i
            depth = 0
            try skipValue()
            body(key, start..<i)
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: ",") else { break }
            i += 1
        }
        i += 1  // '}'
    }

    /// Calls `body` with each element's range, for the array at `i` of a valid text, while
    /// `body` returns true, moving past them.
    private mutating func elements(_ body: (Range<Int>) -> Bool) throws(JSONParseError) {
        i += 1
        skipWS()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return }
        while i < b.count {
            skipWS()
            let start = i
            depth = 0
            try skipValue()
            guard body(start..<i) else { return }
            skipWS()
            guard i < b.count, b[i] == UInt8(ascii: ",") else { break }
            i += 1
        }
        i += 1  // ']'
    }
}
