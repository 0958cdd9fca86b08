/// Dotted paths over arrays: what `--where`, `--index`, `--search` and table columns read.
extension JSONValue {
    /// Every value a dotted path reaches. A segment that meets an array applies to each element
    /// (`labels.name`: every label's name), unless it is an index of that array (`labels.0.name`:
    /// the first label's name); a path that ends on an array reaches its elements (`tags`: each
    /// tag). Values are in document order, without duplicates removed.
    ///
    /// ```swift
    /// let issue = try JSONValue(parsing: #"{"labels":[{"name":"bug"},{"name":"ui"}]}"#)
    /// issue.values(atPath: "labels.name")  // [.string("bug"), .string("ui")]
    /// ```
    public func values(atPath path: String) -> [JSONValue] {
        var out: [JSONValue] = []
        let parts = path.isEmpty ? [] : path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        collect(parts[...], into: &out)
        return out
    }

    private func collect(_ parts: ArraySlice<String>, into out: inout [JSONValue]) {
        guard let head = parts.first else {
            if case .array(let a) = self { out.append(contentsOf: a) } else { out.append(self) }
            return
        }
        switch self {
        case .object(let o):
            o[head]?.collect(parts.dropFirst(), into: &out)
        case .array(let a):
            if JSONPointer.isIndexToken(head) {
                if let i = JSONPointer.readIndex(head, count: a.count) { a[i].collect(parts.dropFirst(), into: &out) }
            } else {
                for element in a { element.collect(parts, into: &out) }
            }
        default:
            return
        }
    }

    /// Whether a dotted path meets an array on the way or at its end in this document: then it
    /// has several values, and cannot order items.
    public func pathReachesArray(_ path: String) -> Bool {
        var current = self
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            switch current {
            case .object(let o):
                guard let next = o[String(part)] else { return false }
                current = next
            case .array(let a):
                guard JSONPointer.isIndexToken(String(part)) else { return true }
                guard let i = JSONPointer.readIndex(String(part), count: a.count) else { return false }
                current = a[i]
            default:
                return false
            }
        }
        if case .array = current { return true }
        return false
    }

    /// Every scalar inside this value, depth first (object members in canonical order): what a
    /// text search looks through.
    public func forEachScalar(_ body: (JSONValue) -> Void) {
        switch self {
        case .array(let a): for v in a { v.forEachScalar(body) }
        case .object(let o): for m in Self.sortedMembers(o) { m.value.forEachScalar(body) }
        default: body(self)
        }
    }
}
