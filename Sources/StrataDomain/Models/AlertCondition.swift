import Foundation
package import StrataJSON

/// An alert's `--when`: a small expression over the item after a change and before it (`old.`).
///
/// ```
/// expr       := or
/// or         := and ("or" and)*
/// and        := not ("and" not)*
/// not        := "not" not | comparison
/// comparison := sum (("=" | "!=" | "<" | "<=" | ">" | ">=" | "~" | "contains") sum)?
/// sum        := unary (("+" | "-") unary)*
/// unary      := "-" unary | primary
/// primary    := number | string | "true" | "false" | "null" | path | "(" expr ")"
/// path       := name ("." name)*      names: letters, digits, "_", "-", "$"; "old." reads the old item
///                                     (a "-" inside a name is part of it: write `a - b` with spaces)
/// ```
///
/// Numbers compare as numbers (`"12"` from the API is not 12); an absent field is null; `=` and
/// `!=` compare any two values, objects regardless of member order; `<`, `<=`, `>`, `>=` and
/// arithmetic take numbers (anything else makes the comparison false); `~` is "contains, ignoring
/// case" on text; `contains` is an array holding a value or a text holding another. A condition
/// that is not a comparison or a boolean field is a type error at `alert add`, as is a literal
/// used where it cannot work (`"a" - 1`, `price < "cheap"`, `1 and 2`).
package struct AlertCondition: Sendable, Hashable, CustomStringConvertible {
    package let text: String
    let root: Node

    package init(parsing text: String) throws(AlertConditionError) {
        var p = Parser(text)
        root = try p.parse()
        self.text = text
    }

    package var description: String { text }

    /// Whether the change from `old` to `new` (nil: absent: before an addition, after a removal)
    /// satisfies the condition.
    package func matches(new: JSONValue?, old: JSONValue?) -> Bool {
        root.evaluate(new: new, old: old) == .bool(true)
    }

    indirect enum Node: Sendable, Hashable {
        case literal(JSONValue)
        case path(old: Bool, String)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)
        case compare(String, Node, Node)
        case arithmetic(String, Node, Node)
        case negate(Node)

        func evaluate(new: JSONValue?, old: JSONValue?) -> JSONValue {
            switch self {
            case .literal(let v): return v
            case .path(let isOld, let path):
                guard let item = isOld ? old : new else { return .null }
                return path.isEmpty ? item : item.value(atPath: path) ?? .null
            case .not(let a): return a.evaluate(new: new, old: old) == .bool(true) ? .bool(false) : .bool(true)
            case .and(let a, let b): return .bool(a.evaluate(new: new, old: old) == .bool(true) && b.evaluate(new: new, old: old) == .bool(true))
            case .or(let a, let b): return .bool(a.evaluate(new: new, old: old) == .bool(true) || b.evaluate(new: new, old: old) == .bool(true))
            case .negate(let a):
                guard let x = Self.number(a.evaluate(new: new, old: old)) else { return .null }
                return Self.json(-x)
            case .arithmetic(let op, let a, let b):
                guard let x = Self.number(a.evaluate(new: new, old: old)), let y = Self.number(b.evaluate(new: new, old: old)) else { return .null }
                return Self.json(op == "+" ? x + y : x - y)
            case .compare(let op, let a, let b):
                return .bool(Self.compare(op, a.evaluate(new: new, old: old), b.evaluate(new: new, old: old)))
            }
        }

        static func number(_ v: JSONValue) -> Double? {
            if case .number(let text) = v { return Double(text) }
            return nil
        }

        static func json(_ d: Double) -> JSONValue {
            d.rounded() == d && abs(d) < 1e15 ? .number(String(Int64(d))) : .number(String(d))
        }

        static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
            if let x = number(a), let y = number(b) { return x == y }
            return a == b
        }

        static func compare(_ op: String, _ a: JSONValue, _ b: JSONValue) -> Bool {
            switch op {
            case "=": return equal(a, b)
            case "!=": return !equal(a, b)
            case "~":
                guard case .string(let s) = a, case .string(let t) = b else { return false }
                return s.range(of: t, options: .caseInsensitive) != nil
            case "contains":
                switch (a, b) {
                case (.array(let xs), _): return xs.contains { equal($0, b) }
                case (.string(let s), .string(let t)): return s.contains(t)
                default: return false
                }
            default:
                guard let x = number(a), let y = number(b) else { return false }
                switch op {
                case "<": return x < y
                case "<=": return x <= y
                case ">": return x > y
                default: return x >= y
                }
            }
        }
    }
}

/// Why a `--when` was refused: where (1-based, in characters) and what was expected.
package struct AlertConditionError: Error, Sendable, Equatable, CustomStringConvertible {
    package var position: Int
    package var message: String
    package var description: String { "at \(position): \(message)" }
}

/// A recursive-descent parser over the condition's characters, with a static check of what the
/// literals allow.
private struct Parser {
    enum Token: Equatable {
        case number(String), string(String), name(String), symbol(String), end
    }

    let chars: [Character]
    var i = 0
    var token: Token = .end
    var tokenStart = 0

    init(_ text: String) { chars = Array(text) }

    /// What an expression is known to be before any item is seen.
    enum Kind: Equatable { case boolean, number, text, null, unknown }

    mutating func parse() throws(AlertConditionError) -> AlertCondition.Node {
        try advance()
        guard token != .end else { throw AlertConditionError(position: 1, message: "expected a condition, e.g. price < 10000") }
        let (node, kind) = try or()
        guard token == .end else { throw error("expected and, or or the end, found \(describe(token))") }
        guard kind == .boolean || kind == .unknown else {
            throw AlertConditionError(position: 1, message: "expected a condition (a comparison, or a field that is true or false), found a \(name(kind))")
        }
        return node
    }

    func error(_ message: String) -> AlertConditionError { AlertConditionError(position: tokenStart + 1, message: message) }

    func describe(_ t: Token) -> String {
        switch t {
        case .number(let n): "the number \(n)"
        case .string(let s): "the text \"\(s)\""
        case .name(let n): "\(n)"
        case .symbol(let s): "\"\(s)\""
        case .end: "the end"
        }
    }

    func name(_ k: Kind) -> String {
        switch k {
        case .boolean: "true or false"
        case .number: "number"
        case .text: "text"
        case .null: "null"
        case .unknown: "value"
        }
    }

    mutating func advance() throws(AlertConditionError) {
        while i < chars.count, chars[i].isWhitespace { i += 1 }
        tokenStart = i
        guard i < chars.count else { token = .end; return }
        let c = chars[i]
        if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber) {
            var j = i
            while j < chars.count, chars[j].isNumber || chars[j] == "." { j += 1 }
            if j < chars.count, chars[j] == "e" || chars[j] == "E" {
                j += 1
                if j < chars.count, chars[j] == "+" || chars[j] == "-" { j += 1 }
                while j < chars.count, chars[j].isNumber { j += 1 }
            }
            let text = String(chars[i..<j])
            guard Double(text) != nil else { throw AlertConditionError(position: i + 1, message: "\(text) is not a number") }
            token = .number(text)
            i = j
            return
        }
        if c == "\"" || c == "'" {
            var j = i + 1
            var s = ""
            while j < chars.count, chars[j] != c {
                if chars[j] == "\\", j + 1 < chars.count { j += 1 }
                s.append(chars[j])
                j += 1
            }
            guard j < chars.count else { throw AlertConditionError(position: i + 1, message: "the text that starts here is not closed with \(c)") }
            token = .string(s)
            i = j + 1
            return
        }
        if c.isLetter || c == "_" || c == "$" {
            var j = i
            while j < chars.count, chars[j].isLetter || chars[j].isNumber || "_-$.".contains(chars[j]) { j += 1 }
            token = .name(String(chars[i..<j]))
            i = j
            return
        }
        for op in ["<=", ">=", "!=", "==", "=", "<", ">", "~", "(", ")", "+", "-"] where String(chars[i..<min(chars.count, i + op.count)]) == op {
            token = .symbol(op == "==" ? "=" : op)
            i += op.count
            return
        }
        throw AlertConditionError(position: i + 1, message: "unexpected \"\(c)\"")
    }

    func isWord(_ w: String) -> Bool { token == .name(w) }

    mutating func or() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        var (node, kind) = try and()
        while isWord("or") {
            try logical(kind, "or")
            try advance()
            let (rhs, rk) = try and()
            try logical(rk, "or")
            node = .or(node, rhs)
            kind = .boolean
        }
        return (node, kind)
    }

    mutating func and() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        var (node, kind) = try not()
        while isWord("and") {
            try logical(kind, "and")
            try advance()
            let (rhs, rk) = try not()
            try logical(rk, "and")
            node = .and(node, rhs)
            kind = .boolean
        }
        return (node, kind)
    }

    func logical(_ k: Kind, _ op: String) throws(AlertConditionError) {
        guard k == .boolean || k == .unknown else { throw error("\(op) takes conditions, not a \(name(k))") }
    }

    mutating func not() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        guard isWord("not") else { return try comparison() }
        try advance()
        let (node, kind) = try not()
        try logical(kind, "not")
        return (.not(node), .boolean)
    }

    mutating func comparison() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        let (lhs, lk) = try sum()
        let op: String
        switch token {
        case .symbol(let s) where ["=", "!=", "<", "<=", ">", ">=", "~"].contains(s): op = s
        case .name("contains"): op = "contains"
        default: return (lhs, lk)
        }
        let at = tokenStart
        try advance()
        let (rhs, rk) = try sum()
        let bad = { (what: String) in AlertConditionError(position: at + 1, message: what) }
        switch op {
        case "<", "<=", ">", ">=":
            for k in [lk, rk] where k != .number && k != .unknown { throw bad("\(op) compares numbers, not a \(name(k))") }
        case "~":
            for k in [lk, rk] where k != .text && k != .unknown { throw bad("~ looks for text in text, not a \(name(k))") }
        case "contains":
            if lk != .text && lk != .unknown { throw bad("contains looks in a list or a text, not a \(name(lk))") }
        default:
            break
        }
        return (.compare(op, lhs, rhs), .boolean)
    }

    mutating func sum() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        var (node, kind) = try unary()
        while case .symbol(let op) = token, op == "+" || op == "-" {
            let at = tokenStart
            try advance()
            let (rhs, rk) = try unary()
            for k in [kind, rk] where k != .number && k != .unknown {
                throw AlertConditionError(position: at + 1, message: "\(op) takes numbers, not a \(name(k))")
            }
            node = .arithmetic(op, node, rhs)
            kind = kind == .number && rk == .number ? .number : .unknown
        }
        return (node, kind)
    }

    mutating func unary() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        guard token == .symbol("-") else { return try primary() }
        let at = tokenStart
        try advance()
        let (node, kind) = try unary()
        guard kind == .number || kind == .unknown else { throw AlertConditionError(position: at + 1, message: "- takes a number, not a \(name(kind))") }
        return (.negate(node), kind)
    }

    mutating func primary() throws(AlertConditionError) -> (AlertCondition.Node, Kind) {
        switch token {
        case .number(let n):
            try advance()
            return (.literal(.number(n)), .number)
        case .string(let s):
            try advance()
            return (.literal(.string(s)), .text)
        case .name("true"), .name("false"):
            let b = token == .name("true")
            try advance()
            return (.literal(.bool(b)), .boolean)
        case .name("null"):
            try advance()
            return (.literal(.null), .null)
        case .name(let n) where ["and", "or", "not", "contains"].contains(n):
            throw error("expected a value, found \(n)")
        case .name(let n):
            guard !n.hasSuffix("."), !n.contains("..") else { throw error("\(n) is not a field path (names joined by single dots)") }
            try advance()
            if n == "old" { return (.path(old: true, ""), .unknown) }
            if n.hasPrefix("old.") { return (.path(old: true, String(n.dropFirst(4))), .unknown) }
            return (.path(old: false, n), .unknown)
        case .symbol("("):
            try advance()
            let inner = try or()
            guard token == .symbol(")") else { throw error("expected ), found \(describe(token))") }
            try advance()
            return inner
        default:
            throw error("expected a value (a number, a text in quotes, a field, or a parenthesis), found \(describe(token))")
        }
    }
}
