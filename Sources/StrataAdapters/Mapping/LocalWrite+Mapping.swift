package import StrataDomain
package import StrataData
import StrataJSON

extension LocalWrite {
    package init(entity w: OutboxWrite) {
        let kind: Kind =
            switch w.kind {
            case .create: .create;
            case .patch: .patch;
            case .delete: .delete
            }
        self.init(
            seq: w.seq, id: w.id, kind: kind, source: w.source, itemID: w.key, serverID: w.serverId, user: w.user, session: w.session,
            state: State(rawValue: w.state.rawValue) ?? .pending, attempts: w.attempts, changes: w.ops.map(Change.init(patch:)),
            document: w.document, base: w.base, status: w.status, reason: w.reason, serverDocument: w.server,
            conflictPaths: w.conflictPaths, rebased: w.rebased)
    }
}

extension PushReport {
    package init(source: String, summary s: PushSummary) {
        self.init(
            source: source,
            outcomes: s.outcomes.map {
                let kind: LocalWrite.Kind =
                    switch $0.kind {
                    case .create: .create;
                    case .patch: .patch;
                    case .delete: .delete
                    }
                return Outcome(
                    write: $0.write, kind: kind, itemID: $0.key, result: Outcome.Result(rawValue: $0.result.rawValue) ?? .failed,
                    status: $0.status, message: $0.message, rebased: $0.rebased)
            }, offline: s.offline, left: s.left, seconds: s.duration.inSeconds)
    }
}

extension WriteBase {
    package init(entity e: WriteBaseEntity) { self.init(document: e.document, version: e.version, etag: e.etag) }
    package var entity: WriteBaseEntity { WriteBaseEntity(document: document, version: version, etag: etag) }
}

extension SessionRecord {
    package init(entity s: EditSessionEntity) {
        self.init(
            name: s.name, state: EditSession.State(rawValue: s.state.rawValue) ?? .open,
            edits: s.edits.map {
                SessionEdit(seq: $0.seq, source: $0.source, itemID: $0.key, ops: $0.ops, base: $0.base, baseETag: $0.baseETag, baseVersion: $0.baseVersion)
            })
    }
}
