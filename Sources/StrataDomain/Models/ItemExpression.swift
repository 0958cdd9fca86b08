import Foundation
package import StrataJSON

/// The one expression language of Strata's questions: `list --where`, `count --where`,
/// `changes --when`, `diff --when` and an alert's `--when`. It reads an item (and, for a change,
/// the item before it: `old.`).
///
/// ```
/// expr       := or
/// or         := and ("or" and)*
/// and        := not ("and" not)*
/// not        := "not" not | comparison
/// comparison := sum (("=" | "!=" | "<" | "<=" | ">" | ">=" | "~" | "contains") sum
///                    | "in" "(" sum ("," sum)* ")")?
/// sum        := product (("+" | "-") product)*
/// product    := unary (("*" | "/") unary)*
/// unary      := "-" unary | primary
/// primary    := number | string | "true" | "false" | "null" | path | "(" expr ")"
/// path       := name ("." name)*      names: letters, digits, "_", "-", "$"; "old." reads the old item
///                                     (a "-" inside a name is part of it: write `a - b` with spaces)
/// ```
///
/// Numbers compare as numbers (`"12"` from the API is not 12); an absent field is null (`price =
/// null` finds items without one); a path reaches through arrays, and a comparison holds when it
/// holds for any value the path reaches (`labels.name = "bug"`; `!=` holds when none is equal);
/// `in` is `=` with any of the listed values; `=` and `!=` compare any two values, objects
/// regardless of member order; `<`, `<=`, `>`, `>=` and
/// arithmetic take numbers (anything else makes the comparison false); `~` is "contains, ignoring
/// case" on text; `contains` is an array holding a value or a text holding another. A condition
/// that is not a comparison or a boolean field is a type error at `alert add`, as is a literal
/// used where it cannot work (`"a" - 1`, `price < "cheap"`, `1 and 2`).
package struct ItemExpression: Sendable, Hashable, CustomStringConvertible {
    package let text: String
    let root: Node

    /// The longest expression taken, in characters, and how deep it may nest: a question, not a
    /// program (and never a stack exhausted by hostile nesting).
    package static let maxLength = 16_384
    package static let maxDepth = 64

    package init(parsing text: String) throws(ExpressionError) {
        guard text.count <= Self.maxLength else {
            throw ExpressionError(position: Self.maxLength + 1, message: "the expression is longer than \(Self.maxLength) characters")
        }
        var p = Parser(text)
        root = try p.parse()
        self.text = text
    }

    package var description: String { text }

    /// Whether the change from `old` to `new` (nil: absent: before an addition, after a removal)
    /// satisfies the condition.
    package func matches(new: JSONValue?, old: JSONValue?) -> Bool {
        root.evaluate(new: new, old: old).first == .bool(true)
    }

    /// Whether the expression is a field alone (a true/false field for an alert), not a condition
    /// on it: a filter refuses one (`--where make` would match nothing and say nothing).
    package var isBarePath: Bool { if case .path = root { true } else { false } }

    /// Whether an item's document satisfies the expression (`old.` reads nothing).
    package func matches(_ document: JSONValue) -> Bool { matches(new: document, old: nil) }

    /// A part of the expression an index can answer: one of the conjuncts of its top-level
    /// `and`s that is `path = literal`, `path in (literals)`, or number bounds on one path (the
    /// bounds of one path merged). The whole expression is still checked on what an index gives.
    package enum IndexConstraint: Sendable, Hashable {
        case equals(path: String, values: [JSONValue])
        case range(path: String, lower: Bound?, upper: Bound?)

        package struct Bound: Sendable, Hashable {
            package var value: Double
            package var inclusive: Bool

            package init(value: Double, inclusive: Bool) {
                self.value = value
                self.inclusive = inclusive
            }
        }

        package var path: String {
            switch self {
            case .equals(let p, _), .range(let p, _, _): p
            }
        }
    }

    /// The expression when it is exactly `path = "text"` for a text that no number, boolean,
    /// null or container has as its index text (`"Kia"`, not `"12"` or `"true"`): then an index
    /// of the path answers it exactly, its counter is the total, and no item need be read to
    /// check it.
    package var exactTextEquality: (path: String, value: String)? {
        guard case .compare("=", let a, let b) = root else { return nil }
        let (p, v): (String, String)
        switch (a, b) {
        case (.path(false, let path), .literal(.string(let text))), (.literal(.string(let text)), .path(false, let path)): (p, v) = (path, text)
        default: return nil
        }
        guard !p.isEmpty, Double(v) == nil, !["true", "false", "null"].contains(v), !v.hasPrefix("{"), !v.hasPrefix("[") else { return nil }
        return (p, v)
    }

    /// The parts of the top-level `and`s: each must hold.
    private var conjuncts: [Node] {
        func split(_ n: Node) -> [Node] {
            if case .and(let a, let b) = n { return split(a) + split(b) }
            return [n]
        }
        return split(root)
    }

    /// Whether the expression can hold for a change whose item is absent before it (`old` is
    /// nil: an addition, a return) or after it (`new` is nil: a removal), whatever the other side
    /// holds. False only when one of its conjuncts cannot: an order (`<`, `>=`…), `~` or
    /// `contains` on a value of the absent side (or arithmetic on one), or `=`/`in` of one with
    /// non-null literals; `price < old.price` never holds for an addition. A walk of the history
    /// passes such versions over without reading them.
    package func canHold(absent old: Bool) -> Bool {
        // The node is null whatever the present side holds.
        func null(_ n: Node) -> Bool {
            switch n {
            case .path(let isOld, _): isOld == old
            case .arithmetic(_, let a, let b): null(a) || null(b)
            case .negate(let a): null(a)
            default: false
            }
        }
        func literal(_ n: Node) -> Bool { if case .literal(let v) = n { v != .null } else { false } }
        return !conjuncts.contains { c in
            switch c {
            case .compare(let op, let a, let b) where ["<", "<=", ">", ">=", "~"].contains(op): null(a) || null(b)
            case .compare("contains", let a, _): null(a)
            case .compare("=", let a, let b): (null(a) && literal(b)) || (literal(a) && null(b))
            case .within(let a, let list): null(a) && list.allSatisfy(literal)
            default: false
            }
        }
    }

    /// The constraints an index could answer, in the order they are written.
    package var indexConstraints: [IndexConstraint] {
        var out: [IndexConstraint] = []
        for c in conjuncts {
            switch c {
            case .compare("=", .path(false, let p), .literal(let v)), .compare("=", .literal(let v), .path(false, let p)):
                if v != .null, !p.isEmpty { out.append(.equals(path: p, values: [v])) }
            case .within(.path(false, let p), let list):
                let values = list.compactMap { if case .literal(let v) = $0, v != .null { v } else { nil } }
                if values.count == list.count, !p.isEmpty { out.append(.equals(path: p, values: values)) }
            case .compare(let op, .path(false, let p), .literal(.number(let t))) where ["<", "<=", ">", ">="].contains(op):
                if let d = Double(t), !p.isEmpty { out.append(Self.bound(p, op, d)) }
            case .compare(let op, .literal(.number(let t)), .path(false, let p)) where ["<", "<=", ">", ">="].contains(op):
                // `5 < price` is `price > 5`.
                let flipped = ["<": ">", "<=": ">=", ">": "<", ">=": "<="][op]!
                if let d = Double(t), !p.isEmpty { out.append(Self.bound(p, flipped, d)) }
            default: break
            }
        }
        // One range per path: the tightest bounds written for it.
        var merged: [IndexConstraint] = []
        for c in out {
            guard case .range(let p, let lo, let hi) = c, let i = merged.firstIndex(where: { if case .range(p, _, _) = $0 { true } else { false } }),
                case .range(_, let lo0, let hi0) = merged[i]
            else {
                merged.append(c)
                continue
            }
            merged[i] = .range(path: p, lower: Self.tighter(lo0, lo, lower: true), upper: Self.tighter(hi0, hi, lower: false))
        }
        return merged
    }

    static func bound(_ path: String, _ op: String, _ d: Double) -> IndexConstraint {
        switch op {
        case ">": .range(path: path, lower: .init(value: d, inclusive: false), upper: nil)
        case ">=": .range(path: path, lower: .init(value: d, inclusive: true), upper: nil)
        case "<": .range(path: path, lower: nil, upper: .init(value: d, inclusive: false))
        default: .range(path: path, lower: nil, upper: .init(value: d, inclusive: true))
        }
    }

    static func tighter(_ a: IndexConstraint.Bound?, _ b: IndexConstraint.Bound?, lower: Bool) -> IndexConstraint.Bound? {
        guard let a else { return b }
        guard let b else { return a }
        if a.value == b.value { return .init(value: a.value, inclusive: a.inclusive && b.inclusive) }
        return (a.value > b.value) == lower ? a : b
    }

    /// The range when the expression is nothing but number bounds on one field of the item
    /// (`price >= 5000 and price < 10000`): then an index of that field answers it whole.
    package var exactRange: IndexConstraint? {
        func bounds(_ n: Node) -> String? {
            switch n {
            case .and(let a, let b):
                guard let x = bounds(a), let y = bounds(b), x == y else { return nil }
                return x
            case .compare(let op, .path(false, let p), .literal(.number)) where ["<", "<=", ">", ">="].contains(op): return p
            case .compare(let op, .literal(.number), .path(false, let p)) where ["<", "<=", ">", ">="].contains(op): return p
            default: return nil
            }
        }
        guard bounds(root) != nil, let only = indexConstraints.first, indexConstraints.count == 1, case .range = only else { return nil }
        return only
    }

    /// The fields of the item (not `old.`) the expression reads.
    package var paths: [String] {
        var out: [String] = []
        func walk(_ n: Node) {
            switch n {
            case .path(false, let p): if !p.isEmpty, !out.contains(p) { out.append(p) }
            case .path, .literal: break
            case .not(let a), .negate(let a): walk(a)
            case .and(let a, let b), .or(let a, let b), .compare(_, let a, let b), .arithmetic(_, let a, let b):
                walk(a)
                walk(b)
            case .within(let a, let list):
                walk(a)
                list.forEach(walk)
            }
        }
        walk(root)
        return out
    }

    indirect enum Node: Sendable, Hashable {
        case literal(JSONValue)
        case path(old: Bool, String)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)
        case compare(String, Node, Node)
        case within(Node, [Node])
        case arithmetic(String, Node, Node)
        case negate(Node)

        /// Every value the node has: one for most; for a path, each value it reaches (the
        /// array itself too when the path ends on one), and null when it reaches none.
        func evaluate(new: JSONValue?, old: JSONValue?) -> [JSONValue] {
            switch self {
            case .literal(let v): return [v]
            case .path(let isOld, let path):
                guard let item = isOld ? old : new else { return [.null] }
                if path.isEmpty { return [item] }
                // A top-level field (most paths): one lookup, the same values as the walk below.
                if case .object(let o) = item, !path.utf8.contains(UInt8(ascii: ".")) {
                    guard let v = o[path] else { return [.null] }
                    if case .array(let a) = v { return [v] + a }
                    return [v]
                }
                var out = item.values(atPath: path)
                if let direct = item.value(atPath: path) {
                    if case .array = direct { out.insert(direct, at: 0) } else if out.isEmpty { out = [direct] }
                }
                return out.isEmpty ? [.null] : out
            case .not(let a): return [.bool(a.evaluate(new: new, old: old).first != .bool(true))]
            case .and(let a, let b):
                return [.bool(a.evaluate(new: new, old: old).first == .bool(true) && b.evaluate(new: new, old: old).first == .bool(true))]
            case .or(let a, let b):
                return [.bool(a.evaluate(new: new, old: old).first == .bool(true) || b.evaluate(new: new, old: old).first == .bool(true))]
            case .negate(let a):
                guard let x = a.evaluate(new: new, old: old).lazy.compactMap(Self.number).first else { return [.null] }
                return [Self.json(-x)]
            case .arithmetic(let op, let a, let b):
                guard let x = a.evaluate(new: new, old: old).lazy.compactMap(Self.number).first,
                    let y = b.evaluate(new: new, old: old).lazy.compactMap(Self.number).first
                else { return [.null] }
                let r: Double =
                    switch op {
                    case "+": x + y
                    case "-": x - y
                    case "*": x * y
                    default: x / y
                    }
                return r.isFinite ? [Self.json(r)] : [.null]
            case .compare(let op, let a, let b):
                let (xs, ys) = (a.evaluate(new: new, old: old), b.evaluate(new: new, old: old))
                switch op {
                case "!=": return [.bool(!xs.contains { x in ys.contains { Self.equal(x, $0) } })]
                case "contains":
                    // A list holding the value; else text holding text.
                    if case .array(let list)? = xs.first { return [.bool(ys.contains { y in list.contains { Self.equal($0, y) } })] }
                    return [.bool(xs.contains { x in ys.contains { Self.compare(op, x, $0) } })]
                default: return [.bool(xs.contains { x in ys.contains { Self.compare(op, x, $0) } })]
                }
            case .within(let a, let list):
                let xs = a.evaluate(new: new, old: old)
                let ys = list.flatMap { $0.evaluate(new: new, old: old) }
                return [.bool(xs.contains { x in ys.contains { Self.equal(x, $0) } })]
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

/// Why an expression was refused: where (1-based, in characters) and what was expected; the same
/// words for every command that takes one.
package struct ExpressionError: Error, Sendable, Equatable, CustomStringConvertible {
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
    /// How deep the expression nests here (parentheses, `not`, a unary minus).
    var depth = 0
    var token: Token = .end
    var tokenStart = 0

    init(_ text: String) { chars = Array(text) }

    /// What an expression is known to be before any item is seen.
    enum Kind: Equatable { case boolean, number, text, null, unknown }

    mutating func parse() throws(ExpressionError) -> ItemExpression.Node {
        try advance()
        guard token != .end else { throw ExpressionError(position: 1, message: "expected a condition, e.g. price < 10000") }
        let (node, kind) = try or()
        guard token == .end else { throw error("expected and, or or the end, found \(describe(token))") }
        guard kind == .boolean || kind == .unknown else {
            throw ExpressionError(position: 1, message: "expected a condition (a comparison, or a field that is true or false), found a \(name(kind))")
        }
        return node
    }

    func error(_ message: String) -> ExpressionError { ExpressionError(position: tokenStart + 1, message: message) }

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

    mutating func advance() throws(ExpressionError) {
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
            guard let d = Double(text) else { throw ExpressionError(position: i + 1, message: "\(text) is not a number") }
            guard d.isFinite else { throw ExpressionError(position: i + 1, message: "\(text) is too large a number") }
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
            guard j < chars.count else { throw ExpressionError(position: i + 1, message: "the text that starts here is not closed with \(c)") }
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
        for op in ["<=", ">=", "!=", "==", "=", "<", ">", "~", "(", ")", "+", "-", "*", "/", ","] where String(chars[i..<min(chars.count, i + op.count)]) == op
        {
            token = .symbol(op == "==" ? "=" : op)
            i += op.count
            return
        }
        throw ExpressionError(position: i + 1, message: "unexpected \"\(c)\"")
    }

    func isWord(_ w: String) -> Bool { token == .name(w) }

    mutating func or() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
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

    mutating func and() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
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

    func logical(_ k: Kind, _ op: String) throws(ExpressionError) {
        guard k == .boolean || k == .unknown else { throw error("\(op) takes conditions, not a \(name(k))") }
    }

    /// Enters one more level of nesting; refuses past ``ItemExpression/maxDepth``.
    mutating func nest() throws(ExpressionError) {
        depth += 1
        guard depth <= ItemExpression.maxDepth else { throw error("the expression nests deeper than \(ItemExpression.maxDepth) levels") }
    }

    mutating func not() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        guard isWord("not") else { return try comparison() }
        try nest()
        defer { depth -= 1 }
        try advance()
        let (node, kind) = try not()
        try logical(kind, "not")
        return (.not(node), .boolean)
    }

    mutating func comparison() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        let (lhs, lk) = try sum()
        let op: String
        switch token {
        case .symbol(let s) where ["=", "!=", "<", "<=", ">", ">=", "~"].contains(s): op = s
        case .name("contains"): op = "contains"
        case .name("in"): return try within(lhs)
        default: return (lhs, lk)
        }
        let at = tokenStart
        try advance()
        let (rhs, rk) = try sum()
        let bad = { (what: String) in ExpressionError(position: at + 1, message: what) }
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

    /// `lhs in (v, …)`: the list after `in`.
    mutating func within(_ lhs: ItemExpression.Node) throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        try advance()
        guard token == .symbol("(") else { throw error("expected ( and a list of values after in, found \(describe(token))") }
        try advance()
        var list: [ItemExpression.Node] = []
        while true {
            let (value, _) = try sum()
            list.append(value)
            if token == .symbol(",") {
                try advance()
                continue
            }
            guard token == .symbol(")") else { throw error("expected , or ) in the list after in, found \(describe(token))") }
            try advance()
            return (.within(lhs, list), .boolean)
        }
    }

    mutating func sum() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        try arithmetic(["+", "-"]) { p throws(ExpressionError) in try p.product() }
    }

    mutating func product() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        try arithmetic(["*", "/"]) { p throws(ExpressionError) in try p.unary() }
    }

    /// `operand (op operand)*` for one level of arithmetic: the operators of that level, left to
    /// right, each taking numbers.
    mutating func arithmetic(
        _ ops: Set<String>, _ operand: (inout Parser) throws(ExpressionError) -> (ItemExpression.Node, Kind)
    ) throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        var (node, kind) = try operand(&self)
        while case .symbol(let op) = token, ops.contains(op) {
            let at = tokenStart
            try advance()
            let (rhs, rk) = try operand(&self)
            for k in [kind, rk] where k != .number && k != .unknown {
                throw ExpressionError(position: at + 1, message: "\(op) takes numbers, not a \(name(k))")
            }
            node = .arithmetic(op, node, rhs)
            kind = kind == .number && rk == .number ? .number : .unknown
        }
        return (node, kind)
    }

    mutating func unary() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
        guard token == .symbol("-") else { return try primary() }
        let at = tokenStart
        try nest()
        defer { depth -= 1 }
        try advance()
        let (node, kind) = try unary()
        guard kind == .number || kind == .unknown else { throw ExpressionError(position: at + 1, message: "- takes a number, not a \(name(kind))") }
        return (.negate(node), kind)
    }

    mutating func primary() throws(ExpressionError) -> (ItemExpression.Node, Kind) {
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
        case .name(let n) where ["and", "or", "not", "contains", "in"].contains(n):
            throw error("expected a value, found \(n)")
        case .name(let n):
            guard !n.hasSuffix("."), !n.contains("..") else { throw error("\(n) is not a field path (names joined by single dots)") }
            try advance()
            if n == "old" { return (.path(old: true, ""), .unknown) }
            if n.hasPrefix("old.") { return (.path(old: true, String(n.dropFirst(4))), .unknown) }
            return (.path(old: false, n), .unknown)
        case .symbol("("):
            try nest()
            defer { depth -= 1 }
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
