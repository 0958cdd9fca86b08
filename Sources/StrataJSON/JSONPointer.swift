/// An RFC 6901 JSON Pointer: `""` (the whole document) or `/`-separated reference tokens, with
/// `~1` for `/` and `~0` for `~` inside a token.
public struct JSONPointer: Hashable, Sendable, CustomStringConvertible {
    /// The pointer as written.
    public let text: String
    /// The reference tokens, unescaped.
    public let tokens: [String]

    /// Parses a pointer. Throws ``JSONPointerError`` for text that is not empty and does not start
    /// with `/`, or a `~` not followed by `0` or `1`.
    public init(_ text: String) throws(JSONPointerError) {
        self.text = text
        guard !text.isEmpty else {
            tokens = []
            return
        }
        guard text.utf8.first == UInt8(ascii: "/") else {
            throw JSONPointerError("\"\(text)\" is not a JSON Pointer: it must be empty or start with /, e.g. /labels/0/name")
        }
        var out: [String] = []
        for raw in text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst() {
            out.append(try Self.unescape(raw, in: text))
        }
        tokens = out
    }

    init(verbatim tokens: [String]) {
        self.tokens = tokens
        self.text = tokens.map { "/" + JSONValue.escape($0) }.joined()
    }

    public var description: String { text }

    /// Whether `self` lies strictly inside `other` (`/a/b` inside `/a`).
    public func isProperlyInside(_ other: JSONPointer) -> Bool {
        tokens.count > other.tokens.count && Array(tokens.prefix(other.tokens.count)) == other.tokens
    }

    private static func unescape(_ raw: Substring.UTF8View.SubSequence, in text: String) throws(JSONPointerError) -> String {
        let bytes = Array(raw)
        guard bytes.contains(UInt8(ascii: "~")) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "~") {
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "0") || bytes[i + 1] == UInt8(ascii: "1") else {
                    throw JSONPointerError("\"\(text)\" has a ~ that is not ~0 (for ~) or ~1 (for /)")
                }
                out.append(bytes[i + 1] == UInt8(ascii: "0") ? UInt8(ascii: "~") : UInt8(ascii: "/"))
                i += 2
            } else {
                out.append(b)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Why a pointer cannot be used: malformed, or it does not lead where an operation needs it.
public struct JSONPointerError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension JSONPointer {
    /// The array index a reference token names, by RFC 6901's grammar: `0`, or digits without a
    /// leading zero; `-` (one past the last element) only where `end` allows it. Anything else —
    /// a sign, a leading zero, an exponent, an index past the end — throws, naming the array's
    /// place and size, so no caller ever subscripts with a number it did not check.
    static func arrayIndex(_ token: String, count: Int, allowingEnd end: Bool, at place: String) throws(JSONPointerError) -> Int {
        let bounds = count == 0 ? (end ? "the array is empty: use 0 or -" : "the array is empty") : (end ? "use 0…\(count) or -" : "use 0…\(count - 1)")
        if token == "-" {
            guard end else { throw JSONPointerError("- names no element of the array at \(where: place) (it means past the end; only add takes it)") }
            return count
        }
        guard isIndexToken(token) else {
            throw JSONPointerError("\"\(token.prefix(40))\" is not an index of the array at \(where: place): \(bounds)")
        }
        guard let i = index(token, below: end ? count + 1 : count) else {
            throw JSONPointerError(
                "index \(token.prefix(40)) is past the end of the array at \(where: place) (\(count) element\(count == 1 ? "" : "s")): \(bounds)")
        }
        return i
    }

    /// The same grammar without bounds, for reads: nil where the token names no element.
    static func readIndex(_ token: String, count: Int) -> Int? {
        isIndexToken(token) ? index(token, below: count) : nil
    }

    /// Whether a token has the grammar of an array index: `0`, or digits without a leading zero.
    static func isIndexToken(_ token: String) -> Bool {
        let u = token.utf8
        guard let first = u.first else { return false }
        return u.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } && (first != UInt8(ascii: "0") || u.count == 1)
    }

    /// An index token's value when it is below `bound`. 18 digits always fit an Int; anything
    /// longer is past the end of any array in memory.
    private static func index(_ token: String, below bound: Int) -> Int? {
        guard token.utf8.count <= 18, let i = Int(token), i < bound else { return nil }
        return i
    }
}

extension DefaultStringInterpolation {
    mutating func appendInterpolation(where place: String) {
        appendLiteral(place.isEmpty ? "the root" : place)
    }
}

extension JSONValue {
    /// What an edit at a pointer does to the value there.
    enum PointerEdit {
        /// RFC 6902 add: set an object member, or insert into an array (`-` appends).
        case add(JSONValue)
        /// Replace an existing value.
        case replace(JSONValue)
        /// Remove an existing value.
        case remove
    }

    /// Applies `edit` at `pointer`; returns the value it removed or replaced (nil for an add that
    /// created a member). Every step is checked: a missing member, a non-index token, an index past
    /// the end or a step into a scalar throws with the place where the walk stopped.
    @discardableResult
    mutating func edit(_ edit: PointerEdit, at pointer: JSONPointer) throws(JSONPointerError) -> JSONValue? {
        try edit_(edit, tokens: pointer.tokens[...], place: "")
    }

    private mutating func edit_(_ edit: PointerEdit, tokens: ArraySlice<String>, place: String) throws(JSONPointerError) -> JSONValue? {
        guard let head = tokens.first else {
            switch edit {
            case .add(let v), .replace(let v):
                let old = self
                self = v
                return old
            case .remove:
                throw JSONPointerError("the whole document cannot be removed; replace it instead")
            }
        }
        let rest = tokens.dropFirst()
        let here = place + "/" + Self.escape(head)
        switch self {
        case .object(var o):
            if rest.isEmpty {
                switch edit {
                case .add(let v):
                    let old = o.updateValue(v, forKey: head)
                    self = .object(o)
                    return old
                case .replace(let v):
                    guard let old = o.updateValue(v, forKey: head) else {
                        throw JSONPointerError("\(here) does not exist (replace needs an existing value; add creates one)")
                    }
                    self = .object(o)
                    return old
                case .remove:
                    guard let old = o.removeValue(forKey: head) else { throw JSONPointerError("\(here) does not exist") }
                    self = .object(o)
                    return old
                }
            }
            guard var child = o[head] else { throw JSONPointerError("\(here) does not exist") }
            // No second reference to the child while it is edited (so it is edited in place); it
            // goes back whether the edit succeeds or throws.
            self = .null
            o[head] = nil
            defer {
                o[head] = child
                self = .object(o)
            }
            return try child.edit_(edit, tokens: rest, place: here)
        case .array(var a):
            if rest.isEmpty {
                switch edit {
                case .add(let v):
                    let i = try JSONPointer.arrayIndex(head, count: a.count, allowingEnd: true, at: place)
                    a.insert(v, at: i)
                    self = .array(a)
                    return nil
                case .replace(let v):
                    let i = try JSONPointer.arrayIndex(head, count: a.count, allowingEnd: false, at: place)
                    let old = a[i]
                    a[i] = v
                    self = .array(a)
                    return old
                case .remove:
                    let i = try JSONPointer.arrayIndex(head, count: a.count, allowingEnd: false, at: place)
                    let old = a.remove(at: i)
                    self = .array(a)
                    return old
                }
            }
            let i = try JSONPointer.arrayIndex(head, count: a.count, allowingEnd: false, at: place)
            var child = a[i]
            self = .null
            a[i] = .null
            defer {
                a[i] = child
                self = .array(a)
            }
            return try child.edit_(edit, tokens: rest, place: here)
        default:
            throw JSONPointerError("\(place.isEmpty ? "the document" : place) is \(kindName), so \(here) does not exist")
        }
    }

    /// The value at a parsed pointer, by RFC 6901's rules (array indices without sign or leading
    /// zero); nil where there is none.
    public func value(at pointer: JSONPointer) -> JSONValue? {
        var current = self
        for token in pointer.tokens {
            switch current {
            case .object(let o):
                guard let next = o[token] else { return nil }
                current = next
            case .array(let a):
                guard let i = JSONPointer.readIndex(token, count: a.count) else { return nil }
                current = a[i]
            default:
                return nil
            }
        }
        return current
    }

    /// "a string", "an array", … for messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue {
    /// Sets `value` at `pointer`, making the objects missing on the way (`--set seller.city=Lyon`
    /// on an item without `seller`). In an array a token must be an index of an element, or the
    /// array's length or `-` to append. Throws where the walk meets a scalar or a bad index.
    public mutating func set(_ value: JSONValue, at pointer: JSONPointer) throws(JSONPointerError) {
        guard !pointer.tokens.isEmpty else { throw JSONPointerError("a field path is needed, e.g. content or seller.city") }
        self = try Self.setting(self, value, tokens: pointer.tokens[...], place: "")
    }

    private static func setting(_ current: JSONValue, _ value: JSONValue, tokens: ArraySlice<String>, place: String) throws(JSONPointerError) -> JSONValue {
        guard let head = tokens.first else { return value }
        let here = place + "/" + escape(head)
        switch current {
        case .object(var o):
            let child = o.removeValue(forKey: head) ?? .object([:])
            o[head] = try setting(child, value, tokens: tokens.dropFirst(), place: here)
            return .object(o)
        case .array(var a):
            let i = try JSONPointer.arrayIndex(head, count: a.count, allowingEnd: true, at: place)
            if i == a.count {
                a.append(try setting(.object([:]), value, tokens: tokens.dropFirst(), place: here))
            } else {
                let child = a[i]
                a[i] = .null
                a[i] = try setting(child, value, tokens: tokens.dropFirst(), place: here)
            }
            return .array(a)
        default:
            throw JSONPointerError("\(place.isEmpty ? "the document" : place) is \(current.kindName), so nothing can be set inside it")
        }
    }
}
