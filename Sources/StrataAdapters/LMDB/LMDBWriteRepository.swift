package import StrataDomain
package import StrataData
package import StrataJSON

/// ``WriteRepository`` over the log: ``LocalWrites`` appends, the `outbox` projection reads.
package struct LMDBWriteRepository: WriteRepository {
    let writes: LocalWrites
    let outboxTables: OutboxTables
    let catalog: SourceCatalog

    package init(writes: LocalWrites, outbox: OutboxTables, catalog: SourceCatalog) {
        self.writes = writes
        self.outboxTables = outbox
        self.catalog = catalog
    }

    package func setting(_ key: String) async throws -> JSONValue? { try await storage { try await writes.config(key) } }
    package func settings() async throws -> [(key: String, value: JSONValue)] { try await storage { try await writes.config() } }
    package func setSetting(_ key: String, _ value: JSONValue) async throws { _ = try await storage { try await writes.setConfig(key, value) } }

    package func base(source: String, id: String) async throws -> WriteBase? {
        let definition = try await catalog.required(source)
        return try await storage { try await writes.base(source: definition, key: id) }.map(WriteBase.init(entity:))
    }

    package func create(source: String, document: JSONValue, user: String) async throws -> (seq: UInt64, id: String) {
        let id = WriteEvents.localKey()
        return (try await storage { try await writes.create(source: source, key: id, document: document, user: user) }, id)
    }

    package func patch(source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64 {
        try await storage { try await writes.patch(source: source, key: id, ops: changes.map(PatchOperation.init), base: base.entity, user: user) }
    }

    package func delete(source: String, items: [(id: String, base: WriteBase)], user: String) async throws -> [UInt64] {
        try await storage { try await writes.delete(source: source, items: items.map { ($0.id, $0.base.entity) }, user: user) }
    }

    package func stage(session: String, source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64 {
        try await storage {
            try await writes.stage(session: session, source: source, key: id, ops: changes.map(PatchOperation.init), base: base.entity, user: user)
        }
    }

    package func session(_ name: String) async throws -> SessionRecord? {
        try await storage { try await outboxTables.session(name) }.map(SessionRecord.init(entity:))
    }
    package func sessions() async throws -> [SessionRecord] { try await storage { try await outboxTables.sessions() }.map(SessionRecord.init(entity:)) }

    package func accept(session: String, patches: [(source: String, id: String, changes: [Change], base: WriteBase)], user: String) async throws -> [UInt64] {
        try await storage {
            try await writes.accept(
                session: session, patches: patches.map { ($0.source, $0.id, $0.changes.map(PatchOperation.init), $0.base.entity) }, user: user)
        }
    }

    package func cancel(session: String, edits: Int, user: String) async throws {
        _ = try await storage { try await writes.cancel(session: session, edits: edits, user: user) }
    }

    package func outbox(source: String?, all: Bool) async throws -> [LocalWrite] {
        try await storage { all ? try await outboxTables.all(source: source) : try await outboxTables.open(source: source) }.map(LocalWrite.init(entity:))
    }

    package func write(seq: UInt64) async throws -> LocalWrite? {
        try await storage { try await outboxTables.write(seq: seq) }.map(LocalWrite.init(entity:))
    }

    private func entity(_ w: LocalWrite) async throws -> OutboxWrite {
        guard let e = try await storage({ try await outboxTables.write(seq: w.seq) }) else {
            throw RepositoryError(.notFound, "no write \(w.seq)", next: .listWrites)
        }
        return e
    }

    /// The key the item goes by now (the server's id once a create of it was acknowledged).
    private func currentKey(_ e: OutboxWrite) async throws -> String {
        if e.kind == .create { return e.serverId ?? e.key }
        return try await storage { try await outboxTables.serverId(source: e.source, key: e.key) } ?? e.key
    }

    package func retry(_ write: LocalWrite, force: Bool, user: String) async throws {
        let e = try await entity(write)
        let key = try await currentKey(e)
        _ = try await storage { try await writes.retry(e, key: key, force: force ? (e.serverETag ?? "*") : nil, user: user) }
    }

    package func drop(_ write: LocalWrite, user: String) async throws {
        let e = try await entity(write)
        let key = try await currentKey(e)
        _ = try await storage { try await writes.drop(e, key: key, user: user) }
    }
}
