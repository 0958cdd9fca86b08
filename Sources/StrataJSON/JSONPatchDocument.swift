/// JSON Pointers (RFC 6901), whole RFC 6902 patch documents (with `test`, `move` and `copy`) and
/// RFC 7396 merge patches: what a write sends and what the fixture API applies.
extension JSONValue {
    /// The value at a JSON Pointer (`/specs/km`, `/parts/0`); `""` is the value itself. A malformed
    /// pointer, like a missing one, has no value.
    public func value(atPointer pointer: String) -> JSONValue? {
        guard let p = try? JSONPointer(pointer) else { return nil }
        return value(at: p)
    }

    /// Applies an RFC 6902 patch document (an array of operations), all or nothing. Errors name
    /// the operation, its position in the patch and its path: a failed `test` throws with kind
    /// ``JSONPatchError/Kind/testFailed``; anything else that does not apply, kind `invalid`.
    /// A patch that leaves the document as it was (an empty one, only `test`s, a `move` onto
    /// itself) applies successfully.
    public func applying(patchDocument: JSONValue) throws(JSONPatchError) -> JSONValue {
        guard case .array(let ops) = patchDocument else {
            throw JSONPatchError(.invalid, "a JSON Patch is an array of operations, e.g. [{\"op\":\"replace\",\"path\":\"/price\",\"value\":10}]")
        }
        var doc = self
        for (index, raw) in ops.enumerated() {
            let op = try PatchDocumentOperation(raw, index: index, count: ops.count)
            try op.apply(to: &doc)
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

/// Why a patch document did not apply: the operation (its position, counted from 1, and its
/// `op` and `path` when it has them) and the reason.
public struct JSONPatchError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The patch is malformed or an operation does not apply to the document.
        case invalid
        /// A `test` operation found another value (or none).
        case testFailed
    }
    public var kind: Kind
    /// The reason, without the operation's place.
    public var reason: String
    /// Which operation, counted from 1, of how many; nil for a patch that is not an array.
    public var position: (index: Int, count: Int)? {
        get { positionIndex.map { ($0, positionCount) } }
        set { positionIndex = newValue?.index; positionCount = newValue?.count ?? 0 }
    }
    public var op: String?
    public var path: String?
    private var positionIndex: Int?
    private var positionCount = 0

    public init(_ kind: Kind, _ reason: String, op: String? = nil, path: String? = nil, position: (index: Int, count: Int)? = nil) {
        self.kind = kind
        self.reason = reason
        self.op = op
        self.path = path
        self.position = position
    }

    public var description: String {
        guard let position else { return "invalid patch: \(reason)" }
        var head = "operation \(position.index) of \(position.count)"
        if let op, let path { head += " (\(op) \(path.isEmpty ? "\"\"" : path))" } else if let op { head += " (\(op))" }
        return "\(head): \(reason)"
    }
}
