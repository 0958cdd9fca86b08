package import StrataJSON

extension Change {
    /// A field change from an RFC 6902 operation with its old value.
    package init(patch: PatchOperation) {
        let kind: Kind =
            switch patch.op {
            case .add: .added;
            case .remove: .removed;
            case .replace: .replaced
            }
        self.init(kind: kind, path: patch.path, old: patch.old, new: patch.value)
    }
}

extension PatchOperation {
    package init(_ change: Change) {
        let op: Op =
            switch change.kind {
            case .added: .add;
            case .removed: .remove;
            case .replaced: .replace
            }
        self.init(op: op, path: change.path, value: change.new, old: change.old)
    }
}
