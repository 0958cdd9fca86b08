import Foundation
package import StrataJSON

/// Creates, edits and deletes items here, as events: visible at once in every read (marked
/// pending), sent later by ``PushOutbox``. Edits can be staged in a named session and accepted
/// (one batch of patches) or cancelled as one. Every write is stamped with the local user.
package struct WriteItems: Sendable {
    let writes: any WriteRepository
    let sources: any SourceRepository
    let lease: LeaseSourceForWrite

    package init(writes: any WriteRepository, sources: any SourceRepository, lease: LeaseSourceForWrite = .none) {
        self.writes = writes
        self.sources = sources
        self.lease = lease
    }

    /// The local user (`config set user NAME`). Throws `invalidQuery` saying how to set it.
    package func user() async throws -> String { try await writes.requiredUser() }

    private func writable(_ name: String, _ kind: LocalWrite.Kind) async throws -> Source {
        let source = try await sources.source(named: name)
        let (has, field): (Bool, SourceSpec.Field) =
            switch kind {
            case .create: (source.createURL != nil, .createURL)
            case .patch: (source.updateURL != nil, .updateURL)
            case .delete: (source.deleteURL != nil, .deleteURL)
            }
        guard has else {
            throw RepositoryError(
                .invalidQuery, "source \(name) takes no \(kind == .create ? "creates" : kind == .patch ? "edits" : "deletes")",
                next: .changeSource(source: name, field: field))
        }
        return source
    }

    /// Creates an item from `document` (a JSON object); the source's owner field is filled with
    /// the user unless the document sets it. Returns the write's seq and the item's local id.
    package func create(source name: String, document: JSONValue) async throws -> (seq: UInt64, id: String) {
        let source = try await writable(name, .create)
        guard case .object = document else { throw RepositoryError(.invalidQuery, "a new item must be a JSON object") }
        let user = try await user()
        var doc = document
        if let owner = source.ownerField, doc.value(atPath: owner) == nil {
            doc = try ItemEdit(sets: [(owner, .string(user))]).applied(to: doc)
        }
        try await lease(name)
        return try await writes.create(source: name, document: doc, user: user)
    }

    /// Edits an item: the difference between its document now and after `edit` becomes the
    /// write's patch (with old values). In a `session`, the edit is only staged. An edit that
    /// leaves the item as it is (a patch of only `test`s, a value set to what it is) succeeds
    /// and writes nothing: the seq is nil and there are no changes.
    package func edit(source name: String, id: String, _ edit: ItemEdit, session: String? = nil) async throws -> (seq: UInt64?, changes: [Change]) {
        _ = try await writable(name, .patch)
        let user = try await user()
        guard var base = try await writes.base(source: name, id: id) else {
            throw RepositoryError(.notFound, "no item \(id) in \(name) (now)", next: .listItems(source: name))
        }
        if let session {
            // Staged edits build on the session's earlier edits of the same item.
            if let s = try await writes.session(session), s.state == .open {
                for e in s.edits where e.source == name && e.itemID == id { base.document = (try? base.document.applying(e.ops)) ?? base.document }
            }
        }
        let target = try edit.applied(to: base.document)
        guard case .object = target else { throw RepositoryError(.invalidQuery, "an item must stay a JSON object") }
        let changes = base.document.diff(to: target).map(Change.init(patch:))
        guard !changes.isEmpty else { return (nil, []) }
        try await lease(name)
        if let session {
            return (try await writes.stage(session: session, source: name, id: id, changes: changes, base: base, user: user), changes)
        }
        return (try await writes.patch(source: name, id: id, changes: changes, base: base, user: user), changes)
    }

    /// Deletes items (one batch). Unknown ids fail the whole call before anything is written.
    package func delete(source name: String, ids: [String]) async throws -> [UInt64] {
        _ = try await writable(name, .delete)
        let user = try await user()
        var items: [(id: String, base: WriteBase)] = []
        for id in ids {
            guard let base = try await writes.base(source: name, id: id) else {
                throw RepositoryError(.notFound, "no item \(id) in \(name) (now); nothing was deleted")
            }
            items.append((id, base))
        }
        try await lease(name)
        return try await writes.delete(source: name, items: items, user: user)
    }

    // MARK: Sessions

    /// The session with its combined patch per item.
    package func session(_ name: String) async throws -> EditSession {
        guard let s = try await writes.session(name) else {
            throw RepositoryError(.notFound, "no session \(name)", next: .stageEdit(session: name))
        }
        return Self.combined(s)
    }

    package func sessions() async throws -> [EditSession] { try await writes.sessions().map(Self.combined) }

    static func combined(_ s: SessionRecord) -> EditSession {
        var order: [String] = [], byItem: [String: (source: String, id: String, base: JSONValue, result: JSONValue, edits: Int)] = [:]
        for e in s.edits {
            let k = e.source + "\u{1F}" + e.itemID
            var entry = byItem[k] ?? (e.source, e.itemID, e.base ?? .object([:]), e.base ?? .object([:]), 0)
            if byItem[k] == nil { order.append(k) }
            entry.result = (try? entry.result.applying(e.ops)) ?? entry.result
            entry.edits += 1
            byItem[k] = entry
        }
        let items = order.map { k in
            let e = byItem[k]!
            return StagedItem(
                source: e.source, itemID: e.id, changes: e.base.diff(to: e.result).map(Change.init(patch:)), base: e.base, result: e.result, edits: e.edits)
        }
        return EditSession(name: s.name, state: s.state, items: items)
    }

    /// Accepts an open session: one patch per item, appended together with the acceptance in
    /// one batch. Returns the writes' seqs.
    package func accept(_ name: String) async throws -> [UInt64] {
        guard let s = try await writes.session(name) else { throw RepositoryError(.notFound, "no session \(name)") }
        guard s.state == .open else { throw RepositoryError(.invalidQuery, "session \(name) is \(s.state.rawValue) already; nothing to accept") }
        let user = try await user()
        let combined = Self.combined(s)
        var patches: [(source: String, id: String, changes: [Change], base: WriteBase)] = []
        for item in combined.items where !item.changes.isEmpty {
            let first = s.edits.first { $0.source == item.source && $0.itemID == item.itemID }!
            patches.append(
                (
                    item.source, item.itemID, item.changes,
                    WriteBase(document: item.base, version: first.baseVersion ?? 0, etag: first.baseETag)
                ))
        }
        for source in Set(patches.map(\.source)).sorted() { try await lease(source) }
        return try await writes.accept(session: name, patches: patches, user: user)
    }

    /// Cancels an open session: its edits never reach the items; the cancellation is logged.
    package func cancel(_ name: String) async throws -> Int {
        guard let s = try await writes.session(name) else { throw RepositoryError(.notFound, "no session \(name)") }
        guard s.state == .open else { throw RepositoryError(.invalidQuery, "session \(name) is \(s.state.rawValue) already; nothing to cancel") }
        try await writes.cancel(session: name, edits: s.edits.count, user: try await user())
        return s.edits.count
    }
}

/// Sends the outbox and manages it: list, retry, drop.
package struct PushOutbox: Sendable {
    let writes: any WriteRepository
    let push: any PushRepository
    let sources: any SourceRepository

    package init(writes: any WriteRepository, push: any PushRepository, sources: any SourceRepository) {
        self.writes = writes
        self.push = push
        self.sources = sources
    }

    /// Pushes the named sources (every source with open writes when empty), in order.
    package func callAsFunction(_ names: [String], concurrency: Int = 1) async throws -> [PushReport] {
        var targets = names
        if targets.isEmpty {
            var seen = Set<String>()
            targets = try await writes.outbox(source: nil, all: false).map(\.source).filter { seen.insert($0).inserted }
        } else {
            for n in names { _ = try await sources.source(named: n) }
        }
        var out: [PushReport] = []
        for t in targets {
            let report = try await push.push(source: t, concurrency: max(1, concurrency))
            out.append(report)
            if report.offline != nil { break }
        }
        return out
    }

    package func outbox(source: String?, all: Bool) async throws -> [LocalWrite] {
        if let source { _ = try await sources.source(named: source) }
        return try await writes.outbox(source: source, all: all)
    }

    private func write(_ seq: UInt64) async throws -> LocalWrite {
        guard let w = try await writes.write(seq: seq) else { throw RepositoryError(.notFound, "no write \(seq)", next: .listWrites) }
        return w
    }

    /// Puts a rejected or conflicted write back in the outbox. A conflicted one is then sent
    /// over the server's version (the local change wins).
    package func retry(_ seq: UInt64) async throws -> LocalWrite {
        let w = try await write(seq)
        guard [.rejected, .conflicted, .dropped].contains(w.state) else {
            throw RepositoryError(.invalidQuery, "write \(seq) is \(w.state.rawValue); only rejected, conflicted or dropped writes can be retried")
        }
        try await writes.retry(w, force: w.state == .conflicted, user: try await writes.requiredUser())
        return w
    }

    /// Takes an open (or rejected) write out of the outbox and out of the items.
    package func drop(_ seq: UInt64) async throws -> LocalWrite {
        let w = try await write(seq)
        guard w.state != .acknowledged, w.state != .dropped else {
            throw RepositoryError(.invalidQuery, "write \(seq) is \(w.state.rawValue); it cannot be dropped")
        }
        try await writes.drop(w, user: try await writes.requiredUser())
        return w
    }
}

extension WriteRepository {
    /// The user writes are signed by. Throws `invalidQuery` saying how to set one.
    func requiredUser() async throws -> String {
        guard case .string(let u)? = try await setting("user"), !u.isEmpty else {
            throw RepositoryError(.invalidQuery, "writes are signed by a user, and none is set", next: .setUser)
        }
        return u
    }
}

/// Settings of this store (`config set user NAME`), each an event.
package struct ManageConfig: Sendable {
    let writes: any WriteRepository
    package static let keys = ["user", "serve.url"]

    package init(writes: any WriteRepository) { self.writes = writes }

    package func set(_ key: String, _ value: String) async throws {
        guard Self.keys.contains(key) else { throw RepositoryError(.invalidQuery, "unknown setting \(key); settings: \(Self.keys.joined(separator: ", "))") }
        let v = value.trimmingCharacters(in: .whitespaces)
        guard !v.isEmpty, v.count <= 128 else { throw RepositoryError(.invalidQuery, "\(key) must be 1–128 characters") }
        if key == "serve.url" {
            guard let url = URL(string: v), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw RepositoryError(.invalidQuery, "serve.url is the address the server is reached at, an http:// or https:// URL: \(v)")
            }
        }
        try await writes.setSetting(key, .string(v))
    }

    package func get(_ key: String) async throws -> String? {
        guard case .string(let s)? = try await writes.setting(key) else { return nil }
        return s
    }

    package func all() async throws -> [(key: String, value: String)] {
        try await writes.settings().map { ($0.key, $0.value.displayText) }
    }
}
