import Foundation
import StrataDomain
import StrataJSON

/// Writes kept in memory behind the domain's protocols: what the browser asked for, in order,
/// with sessions that stage, accept and cancel as the log's outbox projection does.
final class MemoryWrites: WriteRepository, PushRepository, @unchecked Sendable {
    private let lock = NSLock()
    private let items: MemoryRepositories
    var user: String? = "alice"
    private var seq: UInt64 = 100
    private(set) var created: [(source: String, document: JSONValue)] = []
    private(set) var patched: [(id: String, changes: [Change])] = []
    private(set) var deleted: [String] = []
    private(set) var pushes = 0
    private var sessionsByName: [String: SessionRecord] = [:]
    private var open: [LocalWrite] = []

    init(items: MemoryRepositories) { self.items = items }

    private func next() -> UInt64 { seq += 1; return seq }

    func setting(_ key: String) async throws -> JSONValue? { key == "user" ? user.map(JSONValue.string) : nil }
    func settings() async throws -> [(key: String, value: JSONValue)] { user.map { [("user", .string($0))] } ?? [] }
    func setSetting(_ key: String, _ value: JSONValue) async throws { if case .string(let s) = value { user = s } }

    func base(source: String, id: String) async throws -> WriteBase? {
        try await items.item(source: source, id: id, at: .now).map { WriteBase(document: $0.document, version: $0.version, etag: nil) }
    }

    private func write(_ kind: LocalWrite.Kind, _ source: String, _ id: String, changes: [Change] = [], document: JSONValue? = nil) -> UInt64 {
        let s = next()
        open.append(
            LocalWrite(seq: s, id: "w\(s)", kind: kind, source: source, itemID: id, user: user ?? "", state: .pending, changes: changes, document: document))
        return s
    }

    func create(source: String, document: JSONValue, user: String) async throws -> (seq: UInt64, id: String) {
        let id = "local-" + UUID().uuidString.prefix(13).lowercased()
        return lock.withLock {
            created.append((source, document)); return (write(.create, source, id, document: document), id)
        }
    }

    func patch(source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64 {
        lock.withLock {
            patched.append((id, changes)); return write(.patch, source, id, changes: changes)
        }
    }

    func delete(source: String, items: [(id: String, base: WriteBase)], user: String) async throws -> [UInt64] {
        lock.withLock {
            items.map {
                deleted.append($0.id); return write(.delete, source, $0.id)
            }
        }
    }

    func stage(session: String, source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64 {
        lock.withLock {
            var s = sessionsByName[session].flatMap { $0.state == .open ? $0 : nil } ?? SessionRecord(name: session, state: .open, edits: [])
            let n = next()
            s.edits.append(
                SessionEdit(seq: n, source: source, itemID: id, ops: changes.map(PatchOperation.init), base: base.document, baseVersion: base.version))
            sessionsByName[session] = s
            return n
        }
    }

    func session(_ name: String) async throws -> SessionRecord? { lock.withLock { sessionsByName[name] } }
    func sessions() async throws -> [SessionRecord] { lock.withLock { Array(sessionsByName.values) } }

    func accept(session: String, patches: [(source: String, id: String, changes: [Change], base: WriteBase)], user: String) async throws -> [UInt64] {
        lock.withLock {
            sessionsByName[session]?.state = .accepted
            return patches.map {
                patched.append(($0.id, $0.changes)); return write(.patch, $0.source, $0.id, changes: $0.changes)
            }
        }
    }

    func cancel(session: String, edits: Int, user: String) async throws { lock.withLock { sessionsByName[session]?.state = .cancelled } }

    func outbox(source: String?, all: Bool) async throws -> [LocalWrite] { lock.withLock { open.filter { source == nil || $0.source == source } } }
    func write(seq: UInt64) async throws -> LocalWrite? { lock.withLock { open.first { $0.seq == seq } } }
    func retry(_ write: LocalWrite, force: Bool, user: String) async throws {}
    func drop(_ write: LocalWrite, user: String) async throws { lock.withLock { open.removeAll { $0.seq == write.seq } } }

    /// Every open write is acknowledged but a patch of `conflicting`, which conflicts.
    var conflicting: String?
    func push(source: String, concurrency: Int) async throws -> PushReport {
        lock.withLock {
            pushes += 1
            let sent = open.filter { $0.source == source }
            open.removeAll { $0.source == source && $0.itemID != conflicting }
            let outcomes = sent.map { w in
                PushReport.Outcome(
                    write: w.seq, kind: w.kind, itemID: w.itemID, result: w.itemID == conflicting ? .conflicted : .acknowledged,
                    status: w.itemID == conflicting ? 412 : 200, message: w.itemID == conflicting ? "/price changed on the server too" : "ok", rebased: 0)
            }
            return PushReport(source: source, outcomes: outcomes, offline: nil, left: open.filter { $0.source == source }.count, seconds: 0.01)
        }
    }
}
