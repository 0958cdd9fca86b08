/// JSON Pointers (RFC 6901), whole RFC 6902 patch documents (with `test`, `move` and `copy`) and
/// RFC 7396 merge patches: what a write sends and what the fixture API applies.
extension JSONValue {
    /// The value at a JSON Pointer (`/specs/km`, `/parts/0`); `""` is the value itself.
    public func value(atPointer pointer: String) -> JSONValue? {
        var current = self
        for token in Self.tokens(pointer) {
            switch current {
            case .object(let o):
                guard let next = o[token] else { return nil }
                current = next
            case .array(let a):
                guard let i = Int(token), a.indices.contains(i) else { return nil }
                current = a[i]
            default:
                return nil
            }
        }
        return current
    }

    /// Applies an RFC 6902 patch document (an array of operations). A failed `test` throws
    /// ``JSONPatchError/testFailed(path:)``; anything else that does not apply throws `invalid`.
    public func applying(patchDocument: JSONValue) throws(JSONPatchError) -> JSONValue {
        guard case .array(let ops) = patchDocument else { throw .invalid("a JSON Patch is an array of operations") }
        var doc = self
        for raw in ops {
            guard case .object(let o) = raw, case .string(let op)? = o["op"], case .string(let path)? = o["path"] else {
                throw .invalid("every operation needs an op and a path")
            }
            func from() throws(JSONPatchError) -> String {
                guard case .string(let f)? = o["from"] else { throw .invalid("\(op) needs a from") }
                return f
            }
            do {
                switch op {
                case "add", "replace":
                    guard let value = o["value"] else { throw JSONPatchError.invalid("\(op) \(path) needs a value") }
                    if op == "replace", doc.value(atPointer: path) == nil { throw JSONPatchError.invalid("replace \(path): no such path") }
                    doc = try doc.applying([PatchOperation(op: op == "add" ? .add : .replace, path: path, value: value)])
                case "remove":
                    doc = try doc.applying([PatchOperation(op: .remove, path: path)])
                case "test":
                    guard doc.value(atPointer: path) == o["value"] else { throw JSONPatchError.testFailed(path: path) }
                case "move", "copy":
                    let source = try from()
                    guard let value = doc.value(atPointer: source) else { throw JSONPatchError.invalid("\(op) from \(source): no such path") }
                    if op == "move" { doc = try doc.applying([PatchOperation(op: .remove, path: source)]) }
                    doc = try doc.applying([PatchOperation(op: .add, path: path, value: value)])
                default:
                    throw JSONPatchError.invalid("unknown op \(op)")
                }
            } catch let e as JSONPatchError {
                throw e
            } catch {
                throw .invalid("\(op) \(path) does not apply")
            }
        }
        return doc
    }

    /// This document with an RFC 7396 merge patch applied.
    public func mergePatched(with patch: JSONValue) -> JSONValue {
        guard case .object(let p) = patch else { return patch }
        var target: [String: JSONValue] = if case .object(let o) = self { o } else { [:] }
        for (k, v) in p {
            if v == .null { target.removeValue(forKey: k) } else { target[k] = (target[k] ?? .null).mergePatched(with: v) }
        }
        return .object(target)
    }

    /// The RFC 7396 merge patch that turns this document into `other` (objects key by key; a
    /// removed key becomes null; anything else is replaced whole). A null value inside `other`
    /// cannot be expressed by a merge patch: it removes the key instead.
    public func mergePatch(to other: JSONValue) -> JSONValue {
        guard case .object(let a) = self, case .object(let b) = other else { return other }
        var out: [String: JSONValue] = [:]
        for (k, _) in a where b[k] == nil { out[k] = .null }
        for (k, v) in b where a[k] != v { out[k] = (a[k] ?? .null).mergePatch(to: v) }
        return .object(out)
    }
}

extension PatchOperation {
    /// The operation as RFC 6902 sends it (without Strata's `old`).
    public var wire: JSONValue {
        var o: [String: JSONValue] = ["op": .string(op.rawValue), "path": .string(path)]
        if let value, op != .remove { o["value"] = value }
        return .object(o)
    }

    /// A `test` that the document still holds `value` at `path` (RFC 6902 §4.6).
    public static func test(_ path: String, _ value: JSONValue) -> JSONValue {
        .object(["op": .string("test"), "path": .string(path), "value": value])
    }
}

/// Why a patch document did not apply.
public enum JSONPatchError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String)
    case testFailed(path: String)

    public var description: String {
        switch self {
        case .invalid(let why): "invalid patch: \(why)"
        case .testFailed(let path): "test failed at \(path)"
        }
    }
}
