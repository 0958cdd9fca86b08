public import EventStore
import Foundation

/// The base of a write: the item's document as the user saw it, its version and the ETag of the
/// server's version under it, if known.
public struct WriteBaseEntity: Sendable, Hashable {
    public var document: JSONValue
    public var version: Int
    public var etag: String?

    public init(document: JSONValue, version: Int, etag: String?) {
        self.document = document; self.version = version; self.etag = etag
    }
}

/// Appends local writes and everything about them as events (``WriteEvents``). Each call is one
/// append (one transaction): a session's acceptance and all its patches commit together.
public struct LocalWrites: Sendable {
    let store: EventStore

    public init(store: EventStore) { self.store = store }

    private func event(_ type: String, source: String, key: String, user: String?, _ extra: [(String, String)] = [], payload: JSONValue? = nil) -> NewEvent {
        var meta: [(key: String, value: String)] = [("source", source), ("key", key)]
        if let user { meta.append(("user", user)) }
        meta += extra.map { (key: $0.0, value: $0.1) }
        return NewEvent(type: type, stream: source, metadata: meta, payload: payload?.canonicalBytes)
    }

    private static func baseMeta(_ base: WriteBaseEntity?, session: String?) -> [(String, String)] {
        var m: [(String, String)] = []
        if let session { m.append(("session", session)) }
        if let base {
            m.append(("baseVersion", String(base.version)))
            if let e = base.etag { m.append(("baseETag", e)) }
        }
        return m
    }

    /// Passes a write through its source's gate (``IngestGate/admit(_:document:ops:)``): a value
    /// at a redacted path never enters the log.
    /// - Throws: ``IngestGate/Refusal``.
    private func admit(_ source: String, document: JSONValue? = nil, ops: [PatchOperation] = []) async throws {
        try await admit([(source, document, ops)])
    }

    /// The same for writes to several sources: each source's definition read once.
    private func admit(_ writes: [(source: String, document: JSONValue?, ops: [PatchOperation])]) async throws {
        let catalog = SourceCatalog(store: store)
        var definitions: [String: SourceDefinition?] = [:]
        for w in writes {
            if definitions[w.source] == nil { definitions[w.source] = .some(try await catalog.get(w.source)) }
            guard let definition = definitions[w.source] ?? nil else { continue }
            try IngestGate.admit(definition, document: w.document, ops: w.ops)
        }
    }

    @discardableResult
    public func create(source: String, key: String, document: JSONValue, user: String) async throws -> UInt64 {
        try await admit(source, document: document)
        return try await store.append(event(WriteEvents.created, source: source, key: key, user: user, payload: .object(["document": document]))).seq
    }

    /// Creates of several items in one append (local ids made here); returns their seqs.
    public func create(source: String, documents: [JSONValue], user: String) async throws -> [UInt64] {
        try await admit(documents.map { (source, $0, []) })
        return try await store.append(
            documents.map {
                event(WriteEvents.created, source: source, key: WriteEvents.localKey(), user: user, payload: .object(["document": $0]))
            }
        ).map(\.seq)
    }

    public func patchEvent(source: String, key: String, ops: [PatchOperation], base: WriteBaseEntity, user: String, session: String? = nil) -> NewEvent {
        event(
            WriteEvents.patched, source: source, key: key, user: user, Self.baseMeta(base, session: session),
            payload: .object(["ops": .array(ops.map(\.json)), "base": base.document]))
    }

    @discardableResult
    public func patch(source: String, key: String, ops: [PatchOperation], base: WriteBaseEntity, user: String) async throws -> UInt64 {
        try await admit(source, ops: ops)
        return try await store.append(patchEvent(source: source, key: key, ops: ops, base: base, user: user)).seq
    }

    /// Deletes of several items, in one append; returns their seqs.
    public func delete(source: String, items: [(key: String, base: WriteBaseEntity)], user: String) async throws -> [UInt64] {
        try await store.append(
            items.map {
                event(
                    WriteEvents.deleted, source: source, key: $0.key, user: user, Self.baseMeta($0.base, session: nil),
                    payload: .object(["base": $0.base.document]))
            }
        ).map(\.seq)
    }

    @discardableResult
    public func stage(session: String, source: String, key: String, ops: [PatchOperation], base: WriteBaseEntity, user: String) async throws -> UInt64 {
        try await admit(source, ops: ops)
        return try await store.append(
            event(
                WriteEvents.staged, source: source, key: key, user: user, Self.baseMeta(base, session: session),
                payload: .object(["ops": .array(ops.map(\.json)), "base": base.document]))
        ).seq
    }

    /// The session's acceptance and one patch per item, in one append.
    public func accept(session: String, patches: [(source: String, key: String, ops: [PatchOperation], base: WriteBaseEntity)], user: String) async throws
        -> [UInt64]
    {
        try await admit(patches.map { ($0.source, nil, $0.ops) })
        var batch = patches.map { patchEvent(source: $0.source, key: $0.key, ops: $0.ops, base: $0.base, user: user, session: session) }
        batch.append(
            NewEvent(
                type: WriteEvents.sessionAccepted, stream: "session/\(session)",
                metadata: [("session", session), ("user", user), ("writes", String(patches.count))]))
        return try await store.append(batch).dropLast().map(\.seq)
    }

    @discardableResult
    public func cancel(session: String, edits: Int, user: String) async throws -> UInt64 {
        try await store.append(
            NewEvent(
                type: WriteEvents.sessionCancelled, stream: "session/\(session)",
                metadata: [("session", session), ("user", user), ("edits", String(edits))])
        ).seq
    }

    /// Puts a rejected, conflicted or dropped write back in the outbox. `force`: the ETag of the
    /// server's conflicting version, to send the write over it.
    @discardableResult
    public func retry(_ write: OutboxWrite, key: String, force: String?, user: String) async throws -> UInt64 {
        var payload: [String: JSONValue] = ["kind": .string(write.kind.rawValue)]
        if !write.ops.isEmpty { payload["ops"] = .array(write.ops.map(\.json)) }
        if let d = write.document { payload["document"] = d }
        var extra = [("write", String(write.seq))]
        if let force { extra.append(("force", force)) }
        return try await store.append(event(WriteEvents.retried, source: write.source, key: key, user: user, extra, payload: .object(payload))).seq
    }

    @discardableResult
    public func drop(_ write: OutboxWrite, key: String, user: String) async throws -> UInt64 {
        try await store.append(event(WriteEvents.dropped, source: write.source, key: key, user: user, [("write", String(write.seq))])).seq
    }

    /// Records a setting (`config set`).
    @discardableResult
    public func setConfig(_ key: String, _ value: JSONValue) async throws -> UInt64 {
        try await store.append(NewEvent(type: WriteEvents.configChanged, stream: "config", metadata: [("key", key)], payload: value.canonicalBytes)).seq
    }

    /// A setting, or nil.
    public func config(_ key: String) async throws -> JSONValue? {
        try await store.documents(projection: "sources") { try $0.state(collection: "config", key: key) }.flatMap { $0.removed ? nil : $0.document }
    }

    /// Every setting.
    public func config() async throws -> [(key: String, value: JSONValue)] {
        try await store.documents(projection: "sources") { try $0.states(collection: "config").map { ($0.key, $0.document) } }
    }

    /// The base a new write on `key` has now: the item's document as reads show it (local writes
    /// included), its version, and the ETag of the server's last answer or of its stored detail.
    public func base(source: SourceDefinition, key: String) async throws -> WriteBaseEntity? {
        let detailURL = source.detailURL?.replacingOccurrences(of: "{id}", with: key)
        return try await store.read { [store] txn in
            let items = DocumentReader(transaction: txn, tables: try store.tables(of: "items"))
            guard let s = try items.state(collection: source.name, key: key), !s.removed else { return nil }
            var etag = try PendingReader(transaction: txn, tables: try store.tables(of: "items")).etag(source: source.name, key: key)
            if etag == nil, let detailURL {
                let cache = DocumentReader(transaction: txn, tables: try store.tables(of: "http-cache"))
                if case .string(let e)? = try cache.state(collection: "http", key: detailURL)?.document.value(atPath: "etag") { etag = e }
            }
            return WriteBaseEntity(document: s.document, version: s.version, etag: etag)
        }
    }
}
