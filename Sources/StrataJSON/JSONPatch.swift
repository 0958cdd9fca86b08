import Foundation

/// One RFC 6902 operation, extended with the value it replaced or removed (`old`), so a change
/// list reads as "old → new" and can be reverted.
public struct PatchOperation: Hashable, Sendable {
    public enum Op: String, Sendable { case add, remove, replace }
    public var op: Op
    /// A JSON Pointer (RFC 6901).
    public var path: String
    public var value: JSONValue?
    public var old: JSONValue?

    public init(op: Op, path: String, value: JSONValue? = nil, old: JSONValue? = nil) {
        self.op = op
        self.path = path
        self.value = value
        self.old = old
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["op": .string(op.rawValue), "path": .string(path)]
        if let value { o["value"] = value }
        if let old { o["old"] = old }
        return .object(o)
    }

    public init(json: JSONValue) throws {
        guard case .object(let o) = json, case .string(let op)? = o["op"], let kind = Op(rawValue: op),
            case .string(let path)? = o["path"]
        else {
            throw JSONParseError(offset: 0, reason: "not a patch operation")
        }
        self.init(op: kind, path: path, value: o["value"], old: o["old"])
    }
}

extension JSONValue {
    /// The operations that turn `self` into `other`, in an order that applies cleanly.
    /// Objects are compared key by key, arrays index by index (with additions or removals at the
    /// tail), anything else is replaced whole.
    public func diff(to other: JSONValue, at pointer: String = "") -> [PatchOperation] {
        var ops: [PatchOperation] = []
        Self.diff(self, other, pointer, &ops)
        return ops
    }

    private static func diff(_ a: JSONValue, _ b: JSONValue, _ path: String, _ ops: inout [PatchOperation]) {
        if a == b { return }
        switch (a, b) {
        case (.object(let x), .object(let y)):
            for k in sortedKeys(x) where y[k] == nil {
                ops.append(PatchOperation(op: .remove, path: path + "/" + escape(k), old: x[k]))
            }
            for m in sortedMembers(y) {
                let p = path + "/" + escape(m.key)
                if let old = x[m.key] { diff(old, m.value, p, &ops) } else { ops.append(PatchOperation(op: .add, path: p, value: m.value)) }
            }
        case (.array(let x), .array(let y)):
            let common = min(x.count, y.count)
            for i in 0..<common { diff(x[i], y[i], path + "/\(i)", &ops) }
            if x.count > y.count {
                for i in stride(from: x.count - 1, through: y.count, by: -1) {
                    ops.append(PatchOperation(op: .remove, path: path + "/\(i)", old: x[i]))
                }
            } else {
                for i in common..<y.count { ops.append(PatchOperation(op: .add, path: path + "/\(i)", value: y[i])) }
            }
        default:
            ops.append(PatchOperation(op: .replace, path: path, value: b, old: a))
        }
    }

    /// Applies operations (the inverse direction is `reverted`), by RFC 6902's rules for add,
    /// remove and replace. Throws ``JSONPatchError`` naming the operation where a path does not
    /// exist or an index is not one.
    public func applying(_ ops: [PatchOperation]) throws(JSONPatchError) -> JSONValue {
        var v = self
        for (i, op) in ops.enumerated() {
            let fail = { (reason: String) in JSONPatchError(.invalid, reason, op: op.op.rawValue, path: op.path, position: (i + 1, ops.count)) }
            let pointer: JSONPointer
            do { pointer = try JSONPointer(op.path) } catch { throw fail(error.message) }
            do {
                switch op.op {
                case .add: try v.edit(.add(op.value ?? .null), at: pointer)
                case .replace: try v.edit(.replace(op.value ?? .null), at: pointer)
                case .remove: try v.edit(.remove, at: pointer)
                }
            } catch { throw fail(error.message) }
        }
        return v
    }

    /// The JSON Pointer of a dotted path (`specs.km` → `/specs/km`); a path that already starts
    /// with `/` is taken as a pointer.
    public static func pointer(fromPath path: String) -> String {
        if path.hasPrefix("/") || path.isEmpty { return path }
        return path.split(separator: ".", omittingEmptySubsequences: false).map { "/" + escape(String($0)) }.joined()
    }

    static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return token }
        return token.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
