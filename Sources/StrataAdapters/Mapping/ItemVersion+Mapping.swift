package import StrataDomain
package import EventStore
package import StrataData

extension StrataDomain.ChangeKind {
    package init(_ kind: StoredChangeKind) {
        switch kind {
        case .added: self = .added
        case .changed: self = .changed
        case .removed: self = .removed
        case .reappeared: self = .reappeared
        }
    }
}

extension StoredChangeKind {
    package init(_ kind: StrataDomain.ChangeKind) {
        switch kind {
        case .added: self = .added
        case .changed: self = .changed
        case .removed: self = .removed
        case .reappeared: self = .reappeared
        }
    }
}

extension ItemVersion {
    package init(entity e: ItemVersionEntity) {
        self.init(
            version: e.version, seq: e.seq, recordedAt: e.recordedAt.date, kind: ChangeKind(e.kind), run: e.run, eventType: e.eventType,
            changes: e.changes.map(Change.init(patch:)), document: e.document,
            origin: ItemVersion.Origin(rawValue: e.origin.rawValue) ?? .list,
            backfilled: e.backfilled)
        restored = e.restored
        local = e.write.map(LocalWrite.init(entity:))
        if var l = local, let user = e.user { l.user = user; local = l }
    }
}

extension ItemVersionEntity {
    package init(_ v: ItemVersion) {
        self.init(
            version: v.version, seq: v.seq, recordedAt: Timestamp(v.recordedAt), kind: StoredChangeKind(v.kind),
            changes: v.changes.map(PatchOperation.init), document: v.document, run: v.run, eventType: v.eventType,
            origin: ItemVersionEntity.Origin(rawValue: v.origin.rawValue) ?? .list, backfilled: v.backfilled)
    }
}

extension ItemDiff {
    package init(entity e: ItemDiffEntity, source: Source) {
        let doc = e.after ?? e.before ?? .null
        let title = source.title(of: doc, id: e.id)
        self.init(
            id: e.id, title: title, kind: ChangeKind(e.kind), changes: e.changes.map(Change.init(patch:)), before: e.before,
            after: e.kind == .removed ? nil : e.after)
    }
}

extension ItemChange {
    /// A version met by a walk of the log, titled as the item was then.
    package init(entity e: ItemChangeEntity, source: Source) {
        let doc = e.after ?? e.before
        self.init(
            item: e.id, title: source.title(of: doc, id: e.id), seq: e.seq,
            observedAt: e.recordedAt.date, kind: ChangeKind(e.kind), changes: e.changes.map(Change.init(patch:)), after: e.after,
            before: e.before)
    }
}
