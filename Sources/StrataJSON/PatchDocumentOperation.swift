/// One operation of an RFC 6902 patch document, its members checked: `op` and `path` always,
/// `value` for add, replace and test, `from` for move and copy. Members the RFC does not define
/// are ignored (§4).
struct PatchDocumentOperation {
    enum Op: String, CaseIterable {
        case add, remove, replace, move, copy, test
    }
    let op: Op
    let path: JSONPointer
    let value: JSONValue?
    let from: JSONPointer?
    let position: (index: Int, count: Int)

    init(_ raw: JSONValue, index: Int, count: Int) throws(JSONPatchError) {
        let position = (index + 1, count)
        func fail(_ reason: String, op: String? = nil, path: String? = nil) -> JSONPatchError {
            JSONPatchError(.invalid, reason, op: op, path: path, position: position)
        }
        guard case .object(let o) = raw else { throw fail("an operation is a JSON object, not \(raw.kindName)") }
        guard let opMember = o["op"] else { throw fail("it has no \"op\" member (add, remove, replace, move, copy or test)") }
        guard case .string(let name) = opMember, let op = Op(rawValue: name) else {
            throw fail("\(opMember.canonicalString.prefix(40)) is not an op; RFC 6902 has add, remove, replace, move, copy and test")
        }
        guard let pathMember = o["path"] else { throw fail("it has no \"path\" member", op: name) }
        guard case .string(let pathText) = pathMember else { throw fail("\"path\" must be a string (a JSON Pointer), not \(pathMember.kindName)", op: name) }
        do { path = try JSONPointer(pathText) } catch { throw fail(error.message, op: name, path: pathText) }
        switch op {
        case .add, .replace, .test:
            guard let v = o["value"] else { throw fail("\(name) needs a \"value\" member", op: name, path: pathText) }
            value = v
            from = nil
        case .move, .copy:
            guard let f = o["from"] else { throw fail("\(name) needs a \"from\" member", op: name, path: pathText) }
            guard case .string(let fromText) = f else { throw fail("\"from\" must be a string (a JSON Pointer), not \(f.kindName)", op: name, path: pathText) }
            do { from = try JSONPointer(fromText) } catch { throw fail("from: \(error.message)", op: name, path: pathText) }
            value = nil
        case .remove:
            value = nil
            from = nil
        }
        self.op = op
        self.position = position
    }

    private func failure(_ reason: String, kind: JSONPatchError.Kind = .invalid) -> JSONPatchError {
        JSONPatchError(kind, reason, op: op.rawValue, path: path.text, position: position)
    }

    /// Applies the operation to `doc`; on a throw, `doc` is as it was.
    func apply(to doc: inout JSONValue) throws(JSONPatchError) {
        var next = doc
        do {
            switch op {
            case .add: try next.edit(.add(value!), at: path)
            case .replace: try next.edit(.replace(value!), at: path)
            case .remove: try next.edit(.remove, at: path)
            case .test:
                guard let found = doc.value(at: path) else {
                    throw failure("\(path.text.isEmpty ? "the document" : path.text) does not exist", kind: .testFailed)
                }
                guard found.isSameValue(as: value!) else {
                    throw failure("found \(found.canonicalString.prefix(60)), expected \(value!.canonicalString.prefix(60))", kind: .testFailed)
                }
                return
            case .move, .copy:
                let from = from!
                guard let moved = doc.value(at: from) else { throw failure("from \(from.text): it does not exist") }
                if op == .move {
                    if from == path { return }
                    guard !path.isProperlyInside(from) else { throw failure("a value cannot be moved into itself (\(path.text) is inside \(from.text))") }
                    try next.edit(.remove, at: from)
                }
                try next.edit(.add(moved), at: path)
            }
        } catch let e as JSONPatchError {
            throw e
        } catch let e as JSONPointerError {
            throw failure(e.message)
        } catch {
            throw failure("\(error)")
        }
        doc = next
    }
}

extension JSONValue {
    /// Equality as RFC 6902's `test` defines it: numbers by numeric value (`1`, `1.0` and `1e0`
    /// are equal), objects regardless of member order, arrays element by element.
    public func isSameValue(as other: JSONValue) -> Bool {
        switch (self, other) {
        case (.number(let a), .number(let b)): return a == b || JSONNumber(a) == JSONNumber(b)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.isSameValue(as: $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (k, v) in a {
                guard let w = b[k], v.isSameValue(as: w) else { return false }
            }
            return true
        default: return self == other
        }
    }
}

/// A JSON number's exact value: sign, significant digits and a decimal exponent, so that numbers
/// compare by value without the rounding of a binary float.
struct JSONNumber: Equatable {
    var negative = false
    var digits: [UInt8] = []
    var exponent = 0

    init(_ text: String) {
        var u = Array(text.utf8)[...]
        if u.first == UInt8(ascii: "-") {
            negative = true
            u = u.dropFirst()
        }
        var fraction = 0, inFraction = false
        while let c = u.first, c != UInt8(ascii: "e"), c != UInt8(ascii: "E") {
            u = u.dropFirst()
            if c == UInt8(ascii: ".") {
                inFraction = true
                continue
            }
            digits.append(c)
            if inFraction { fraction += 1 }
        }
        var exp = 0
        if !u.isEmpty {
            u = u.dropFirst()
            var expNegative = false
            if let s = u.first, s == UInt8(ascii: "-") || s == UInt8(ascii: "+") {
                expNegative = s == UInt8(ascii: "-")
                u = u.dropFirst()
            }
            for c in u { exp = min(exp * 10 + Int(c &- UInt8(ascii: "0")), 1 << 40) }
            if expNegative { exp = -exp }
        }
        while digits.first == UInt8(ascii: "0") { digits.removeFirst() }
        exponent = exp - fraction
        while digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty {
            negative = false
            exponent = 0
        }
    }
}
