import EventStore

/// How local writes and their outcomes fold into the `items` projection (through
/// ``PendingOverlay``) and into the `outbox` projection (``Outbox``).
enum LocalWriteFold {
    static func json(_ event: RecordedEvent, _ ctx: ProjectionContext) throws -> JSONValue? {
        guard let body = try ctx.payload(of: event), !body.isEmpty else { return nil }
        return try? JSONValue(parsing: body)
    }

    static func ops(_ payload: JSONValue?) throws -> [PatchOperation] {
        guard case .array(let a)? = payload?.value(atPath: "ops") else { return [] }
        return try a.map(PatchOperation.init(json:))
    }

    static func required(_ event: RecordedEvent, _ key: String) throws -> String {
        guard let v = event[metadata: key] else { throw DocumentError("\(event.type) without \(key)") }
        return v
    }

    /// The `items` projection's operations for a write or an outcome.
    static func items(_ event: RecordedEvent, _ ctx: ProjectionContext) throws -> [DocumentOperation] {
        let source = try required(event, "source"), key = try required(event, "key")
        let overlay = PendingOverlay(context: ctx, source: source)
        let reader = DocumentReader(transaction: ctx.transaction, tables: ctx.tables)
        func current() throws -> JSONValue? {
            guard let s = try reader.state(collection: source, key: key), !s.removed else { return nil }
            return s.document
        }
        let payload = try json(event, ctx)
        switch event.type {
        case WriteEvents.created:
            guard let doc = payload?.value(atPath: "document") else { throw DocumentError("a created item without its document") }
            return [try overlay.append(.init(seq: event.seq, kind: .create, ops: [], document: doc), key: key, current: nil, seq: event.seq)]
        case WriteEvents.patched:
            return [
                try overlay.append(.init(seq: event.seq, kind: .patch, ops: try ops(payload), document: nil), key: key, current: try current(), seq: event.seq)
            ]
        case WriteEvents.deleted:
            return [try overlay.append(.init(seq: event.seq, kind: .delete, ops: [], document: nil), key: key, current: try current(), seq: event.seq)]
        case WriteEvents.acknowledged:
            let write = try writeSeq(event)
            return try overlay.acknowledged(
                key, write: write, answer: payload, serverId: event[metadata: "serverId"], etag: event[metadata: "etag"], at: event.seq)
        case WriteEvents.rejected, WriteEvents.dropped:
            return try overlay.withdrawn(key, write: try writeSeq(event), at: event.seq)
        case WriteEvents.conflicted:
            let server = payload?.value(atPath: "server")
            return try overlay.conflicted(key, write: try writeSeq(event), server: server == .null ? nil : server, at: event.seq)
        case WriteEvents.retried:
            guard case .string(let k)? = payload?.value(atPath: "kind"), let kind = WriteKind(rawValue: k) else {
                throw DocumentError("a retried write without its kind")
            }
            let write = PendingOverlay.Write(seq: try writeSeq(event), kind: kind, ops: try ops(payload), document: payload?.value(atPath: "document"))
            return try overlay.retried(key, write, at: event.seq, current: try current())
        default:
            return []
        }
    }

    static func writeSeq(_ event: RecordedEvent) throws -> UInt64 {
        guard let s = event[metadata: "write"].flatMap(UInt64.init) else { throw DocumentError("\(event.type) without the seq of its write") }
        return s
    }
}
