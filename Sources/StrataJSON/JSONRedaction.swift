/// Replaces the values at dotted paths of a JSON text by placeholders, leaving every other byte as
/// it came: the body that is stored is the response with the redacted values cut out, not a
/// re-serialization of it (key order, spacing and number forms stay the upstream's).
///
/// A path is read from an *item root*: the document itself (``Scope/document``), or each element
/// (or member value, for an object keyed by id) of the container at a dotted path
/// (``Scope/items(at:)``; the empty path: the body is the container). Inside an item, arrays are
/// walked through as ``JSONValue/values(atPath:)`` does, so `phones.number` reaches the number of
/// every phone. A value found at a path is replaced whole — a string, a number, an object —
/// by the JSON string `placeholder(path, value)` returns.
///
/// ```swift
/// let out = try JSONRedaction(paths: ["email"]).redact(Array(#"[{"id":1,"email":"a@b.c"}]"#.utf8), scope: .items(at: [])) { _, _ in "[redacted]" }
/// // [{"id":1,"email":"[redacted]"}]
/// ```
public struct JSONRedaction: Sendable {
    /// Where the paths start.
    public enum Scope: Sendable, Equatable {
        /// The whole text is one item (a detail, a recorded response).
        case document
        /// The items are the elements or member values of the container at this path.
        case items(at: [String])
    }

    /// How deep a text may nest: deeper is refused rather than followed on the stack.
    public static let maxDepth = 512

    /// The dotted paths, each split at its dots.
    public let paths: [[String]]
    private let byKey: Set<[String]>

    public init(paths: [String]) {
        self.paths = paths.map { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        byKey = Set(self.paths)
    }

    public var isEmpty: Bool { paths.isEmpty }

    /// `text` with every value at the paths replaced by `placeholder(dotted path, value)`, or nil
    /// when no path was found (the text is stored as it came). A value that is already the string
    /// `placeholder` would leave is kept as it is, since `keep` says so.
    /// - Throws: ``JSONParseError`` when the text is not JSON or nests deeper than ``maxDepth``.
    public func redact(
        _ text: [UInt8], scope: Scope, keep: (String) -> Bool = { _ in false }, placeholder: (_ path: String, _ value: JSONValue) -> String
    ) throws(JSONParseError) -> [UInt8]? {
        guard !paths.isEmpty else { return nil }
        // Validated once up front (the parser's grammar and limits); the scan then only finds
        // the structure and the spans.
        try JSONValue.validate(text)
        var scanner = Scanner(text: text, byKey: byKey)
        let start: Position =
            switch scope {
            case .document: .item([])
            case .items(let at): at.isEmpty ? .container : .prefix(at[...])
            }
        scanner.skipSpace()
        try scanner.value(start, depth: 0)
        guard !scanner.found.isEmpty else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var copied = 0
        var changed = false
        for f in scanner.found {
            let span = Array(text[f.range])
            let value = try JSONValue(parsing: span)
            if case .string(let s) = value, keep(s) { continue }
            let path = f.path.joined(separator: ".")
            out += text[copied..<f.range.lowerBound]
            out += JSONValue.string(placeholder(path, value)).canonicalBytes
            copied = f.range.upperBound
            changed = true
        }
        guard changed else { return nil }
        out += text[copied...]
        return out
    }

    /// Where the scanner is relative to the item roots.
    private enum Position {
        /// Following the container's path; what is left of it.
        case prefix(ArraySlice<String>)
        /// At the container: its elements or member values are items.
        case container
        /// Inside an item, at this path of object keys.
        case item([String])
        /// Nowhere a path can reach.
        case outside
    }

    private struct Found {
        var path: [String]
        var range: Range<Int>
    }

    private struct Scanner {
        let text: [UInt8]
        let byKey: Set<[String]>
        var at = 0
        var found: [Found] = []

        init(text: [UInt8], byKey: Set<[String]>) {
            self.text = text
            self.byKey = byKey
        }

        mutating func skipSpace() {
            while at < text.count, text[at] == 0x20 || text[at] == 0x0A || text[at] == 0x0D || text[at] == 0x09 { at += 1 }
        }

        func fail(_ why: String) -> JSONParseError { JSONParseError(offset: at, reason: why) }

        /// Scans one value at `position`, recording the spans of values at the paths.
        mutating func value(_ position: Position, depth: Int) throws(JSONParseError) {
            guard depth <= JSONRedaction.maxDepth else { throw fail("nested deeper than \(JSONRedaction.maxDepth) levels") }
            guard at < text.count else { throw fail("unexpected end of the text") }
            switch text[at] {
            case UInt8(ascii: "{"):
                at += 1
                skipSpace()
                if at < text.count, text[at] == UInt8(ascii: "}") { at += 1; return }
                while true {
                    skipSpace()
                    guard at < text.count, text[at] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                    let keyStart = at
                    let escaped = try string()
                    let key: String
                    if escaped {
                        guard case .string(let k) = try JSONValue(parsing: text[keyStart..<at]) else { throw fail("expected a member name") }
                        key = k
                    } else {
                        key = String(decoding: text[(keyStart + 1)..<(at - 1)], as: UTF8.self)
                    }
                    skipSpace()
                    guard at < text.count, text[at] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    at += 1
                    skipSpace()
                    try member(key, of: position, depth: depth)
                    skipSpace()
                    guard at < text.count else { throw fail("unexpected end of the text") }
                    if text[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard text[at] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                    at += 1
                    return
                }
            case UInt8(ascii: "["):
                at += 1
                skipSpace()
                if at < text.count, text[at] == UInt8(ascii: "]") { at += 1; return }
                let element: Position =
                    switch position {
                    case .container: .item([])
                    case .item(let p): .item(p)
                    case .prefix, .outside: .outside
                    }
                while true {
                    skipSpace()
                    try value(element, depth: depth + 1)
                    skipSpace()
                    guard at < text.count else { throw fail("unexpected end of the text") }
                    if text[at] == UInt8(ascii: ",") { at += 1; continue }
                    guard text[at] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                    at += 1
                    return
                }
            case UInt8(ascii: "\""):
                _ = try string()
            default:
                try scalar()
            }
        }

        /// Scans a member's value: recorded whole when its path is one to redact.
        private mutating func member(_ key: String, of position: Position, depth: Int) throws(JSONParseError) {
            let inner: Position
            switch position {
            case .prefix(let rest):
                inner = rest.first == key ? (rest.count == 1 ? .container : .prefix(rest.dropFirst())) : .outside
            case .container:
                inner = .item([])
            case .item(let p):
                let path = p + [key]
                if byKey.contains(path) {
                    let start = at
                    try value(.outside, depth: depth + 1)
                    found.append(Found(path: path, range: start..<at))
                    return
                }
                inner = .item(path)
            case .outside:
                inner = .outside
            }
            try value(inner, depth: depth + 1)
        }

        /// Skips a string; returns whether it holds an escape.
        @discardableResult
        private mutating func string() throws(JSONParseError) -> Bool {
            at += 1
            var escaped = false
            while at < text.count {
                switch text[at] {
                case UInt8(ascii: "\""): at += 1; return escaped
                case UInt8(ascii: "\\"): at += 2; escaped = true
                case 0..<0x20: throw fail("a control character in a string")
                default: at += 1
                }
            }
            throw fail("an unterminated string")
        }

        private mutating func scalar() throws(JSONParseError) {
            let start = at
            while at < text.count {
                let b = text[at]
                guard b != UInt8(ascii: ","), b != UInt8(ascii: "}"), b != UInt8(ascii: "]"), b != 0x20, b != 0x0A, b != 0x0D, b != 0x09 else { break }
                at += 1
            }
            guard at > start else { throw fail("expected a value") }
        }
    }
}
