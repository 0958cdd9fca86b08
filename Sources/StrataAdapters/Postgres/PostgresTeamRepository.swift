import EventStore
import Foundation
import Logging
import StrataData
package import StrataDomain
import TeamLog

/// ``TeamRepository`` over PostgreSQL team logs (the TeamLog target) and the store's registry of
/// them (`remotes.json`): the team-sync algorithm — push, pull, alignment, the replica that puts
/// the store in the log's order, follow — in one place.
package struct PostgresTeamRepository: TeamRepository {
    let access: any StoreOpening
    /// How long one database step may take.
    let operationTimeout: Duration

    package init(access: any StoreOpening, operationTimeout: Duration) {
        self.access = access
        self.operationTimeout = operationTimeout
    }

    static let replicaMark = ".strata-replica-swapped"

    private var path: String { access.path }

    package func remotes() throws -> TeamRemotes {
        let registry = try loadRegistry()
        return TeamRemotes(
            node: registry.node,
            remotes: registry.remotes.keys.sorted().map {
                TeamRemote(name: $0, redactedURL: TeamLogLocation.redact(registry.remotes[$0]!.url), pulled: registry.remotes[$0]!.pulled)
            })
    }

    package func addRemote(_ name: String, url: String) async throws -> TeamRemote {
        let parsed: TeamLogLocation
        do { parsed = try TeamLogLocation(url: url) } catch { throw RepositoryError(.invalidQuery, "\(error)", cause: error) }
        _ = try await access.opened()  // the store exists, under its key if it has one
        var registry = try loadRegistry()
        if registry.remotes[name] != nil {
            throw RepositoryError(.storage, "a remote named \(name) exists", next: .removeRemote(name: name))
        }
        registry.remotes[name] = .init(url: parsed.url)
        try save(registry, at: path)
        return TeamRemote(name: name, redactedURL: TeamLogLocation.redact(url), pulled: 0)
    }

    package func removeRemote(_ name: String) throws {
        var registry = try loadRegistry()
        _ = try resolve(name, in: registry)
        registry.remotes[name] = nil
        try save(registry, at: path)
    }

    package func status(remote name: String?, verifyChain: Bool) async throws -> TeamStatus {
        let store = try await access.opened()
        let registry = try loadRegistry()
        let (name, remote) = try resolve(name, in: registry)
        return try await withTeamLog(remote) { log in
            let head = try await log.head()
            let local = try await store.head().seq
            let ahead = try await log.unpushed(from: store, node: registry.node)
            let behind = try await log.unpulled(into: store, after: remote.pulled)
            let leases = try await log.leases()
            let problems = verifyChain ? try await log.verify() : nil
            return TeamStatus(
                remote: name, node: registry.node, logHead: head.seq, pulled: remote.pulled, inOrder: remote.inOrder, localEvents: local, ahead: ahead,
                behind: behind, leases: leases.map { TeamLease(source: $0.stream, node: $0.node, token: $0.token, secondsLeft: $0.secondsLeft) },
                heldTokens: remote.leases ?? [:], chainProblems: problems)
        }
    }

    package func push(remote: String?, batch: Int) async throws -> TeamPush {
        try await withRemote(remote) { store, registry, name, log in try await push(store, log, registry, name, batch: batch) }
    }

    package func pull(remote: String?) async throws -> TeamPull {
        try await withRemote(remote) { store, registry, name, log in try await pull(store, log, &registry, name) }
    }

    package func sync(remote: String?) async throws -> (TeamPush, TeamPull) {
        try await withRemote(remote) { store, registry, name, log in
            let pushed = try await push(store, log, registry, name, batch: 1_000)
            return (pushed, try await pull(store, log, &registry, name))
        }
    }

    package func follow(remote: String?, poll: Duration, report: @escaping @Sendable (TeamFollowEvent) -> Void) async throws -> (
        remote: String, position: UInt64
    ) {
        try await withRemote(remote) { store, registry, name, log in
            try await log.migrate()
            let start = registry.remotes[name]!.pulled
            var store = store
            // A pull that finds the store out of the log's order ends the follow for a moment:
            // the store is put in order, opened again, and followed on. Another process having
            // the store open defers it (checked again every few seconds, said once).
            var deferred = false
            do {
                while true {
                    do {
                        try await log.follow(into: store, after: registry.remotes[name]!.pulled, poll: poll) { r in
                            registry.remotes[name]!.pulled = r.position
                            try save(registry, at: path)
                            if r.appended > 0 {
                                report(.pulled(remote: name, appended: r.appended, bodiesDownloaded: r.bodiesDownloaded, position: r.position))
                            }
                            guard try await alignment(store, log, &registry, name) == r.position else { throw OutOfOrder() }
                        }
                        break
                    } catch is OutOfOrder {
                        let ordering = try await keepInLogOrder(store, log, &registry, name)
                        switch ordering {
                        case .inOrder: break
                        case .reordered:
                            report(.ordering(remote: name, ordering))
                            store = try await access.opened()
                            deferred = false
                        case .deferred:
                            if !deferred { report(.ordering(remote: name, ordering)) }
                            deferred = true
                            try await Task.sleep(for: min(poll, .seconds(3)))
                        }
                    }
                }
            } catch is CancellationError {}
            return (name, (try? RemoteRegistry.load(store: path).remotes[name]?.pulled) ?? start)
        }
    }

    package func lease(source: String, remote: String?, ttl: Double, force: Bool) async throws -> TeamLeaseGrant {
        try await withRemote(remote) { _, registry, name, log in
            let grant = try await log.acquireLease(stream: source, node: registry.node, ttl: ttl, force: force)
            registry.remotes[name]!.leases = (registry.remotes[name]!.leases ?? [:]).merging([source: grant.token]) { $1 }
            try save(registry, at: path)
            return TeamLeaseGrant(remote: name, token: grant.token, takenFrom: grant.takenFrom, forced: grant.forced)
        }
    }

    package func release(source: String, remote: String?) async throws -> String {
        try await withRemote(remote) { _, registry, name, log in
            guard try await log.releaseLease(stream: source, node: registry.node) else {
                throw RepositoryError(.notFound, "this node does not hold the lease on \(source)")
            }
            return name
        }
    }

    package func reading<T: Sendable>(remote: String, _ body: (ReplayLog) async throws -> T) async throws -> T {
        let (_, entry) = try resolve(remote, in: try loadRegistry())
        return try await withTeamLog(entry) { log in try await body(ReplayLog(log: LMDBEventLogRepository(log: log))) }
    }

    // MARK: The steps

    private func loadRegistry() throws -> RemoteRegistry {
        do { return try RemoteRegistry.load(store: path) } catch { throw RepositoryError(.storage, "\(error)", cause: error) }
    }

    private func save(_ registry: RemoteRegistry, at directory: String) throws {
        do { try registry.save(store: directory) } catch { throw RepositoryError(.storage, "\(error)", cause: error) }
    }

    /// The remote `name`, or the only one when `name` is nil.
    private func resolve(_ name: String?, in registry: RemoteRegistry) throws -> (name: String, remote: RemoteRegistry.Remote) {
        if let name {
            guard let r = registry.remotes[name] else {
                throw RepositoryError(.notFound, "no remote named \(name)", next: .addRemote(name: name))
            }
            return (name, r)
        }
        guard registry.remotes.count == 1, let only = registry.remotes.first else {
            if registry.remotes.isEmpty { throw RepositoryError(.invalidQuery, "no remote yet", next: .addRemote(name: nil)) }
            throw RepositoryError(.invalidQuery, "name the remote: \(registry.remotes.keys.sorted().joined(separator: ", "))")
        }
        return (only.key, only.value)
    }

    /// Opens the store, its registry (saved first, so the node id stays the same from the first
    /// push on) and the remote's team log for `body`.
    private func withRemote<T>(
        _ name: String?, _ body: (EventStore, inout RemoteRegistry, String, PostgresTeamLog) async throws -> T
    ) async throws -> T {
        // A pull stopped after putting the store in the log's order leaves the old copy behind.
        let standard = (path as NSString).standardizingPath
        _ = try? EventStore.settleSwap(of: standard, copyPath: standard + ".replica", mark: Self.replicaMark)
        let store = try await access.opened()
        var registry = try loadRegistry()
        try save(registry, at: path)
        let (name, remote) = try resolve(name, in: registry)
        return try await withTeamLog(remote) { log in try await body(store, &registry, name, log) }
    }

    /// Opens the remote's team log for `body`, closing it after; its refusals as repository errors.
    private func withTeamLog<T>(_ remote: RemoteRegistry.Remote, _ body: (PostgresTeamLog) async throws -> T) async throws -> T {
        let log: PostgresTeamLog
        do {
            log = try PostgresTeamLog(location: TeamLogLocation(url: remote.url), operationTimeout: operationTimeout, logger: access.logger)
        } catch { throw RepositoryError(.storage, "\(error)", cause: error) }
        do {
            let value = try await engine { try await body(log) }
            await log.close()
            return value
        } catch let e as TeamLogError {
            await log.close()
            throw e.repositoryError()
        } catch {
            await log.close()
            throw error
        }
    }

    private func push(_ store: EventStore, _ log: PostgresTeamLog, _ registry: RemoteRegistry, _ name: String, batch: Int) async throws -> TeamPush {
        let started = ContinuousClock.now
        let teamKey = try await log.events(EventQuery(type: RedactionKeyLedger.eventType, limit: 1, descending: true)).first.flatMap(
            RedactionKeyLedger.Record.init)
        do { try await RedactionKeyLedger(store: store).confirmPush(after: teamKey) } catch let e as RedactionKeyError {
            throw e.repositoryError("team log \(name)")
        }
        let r = try await log.push(
            from: store, node: registry.node, leases: registry.remotes[name]?.leases ?? [:], batch: batch, inOrder: registry.remotes[name]?.inOrder ?? 0)
        var push = TeamPush(
            remote: name, appended: r.appended, alreadyThere: r.alreadyThere, bodiesUploaded: r.bodiesUploaded, bodyBytesUploaded: r.bodyBytesUploaded,
            headSeq: r.headSeq, duration: ContinuousClock.now - started)
        push.bodiesErased = r.bodiesErased
        return push
    }

    private func pull(_ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String) async throws -> TeamPull {
        let r = try await log.pull(into: store, after: registry.remotes[name]!.pulled)
        registry.remotes[name]!.pulled = r.position
        try save(registry, at: path)
        let ordering = try await keepInLogOrder(store, log, &registry, name)
        return TeamPull(
            remote: name, appended: r.appended, alreadyHere: r.alreadyHere, bodiesDownloaded: r.bodiesDownloaded,
            bodyBytesDownloaded: r.bodyBytesDownloaded, position: r.position, ordering: ordering)
    }

    /// How far the store's seqs are the log's, up to the pulled position: checked from the seq
    /// known to be in order, and remembered in the registry when it reaches the position.
    private func alignment(_ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String) async throws -> UInt64 {
        let position = registry.remotes[name]!.pulled
        let known = registry.remotes[name]!.inOrder ?? 0
        guard known != position else { return position }
        let inOrder = try await log.alignment(of: store, from: known, position: position)
        if inOrder == position {
            registry.remotes[name]!.inOrder = position
            try save(registry, at: path)
        }
        return inOrder
    }

    /// Ends a follow's pull to put the store in the log's order.
    private struct OutOfOrder: Error {}

    /// After a pull: when the store's own events were overtaken by other nodes' pushes, puts the
    /// store in the log's order up to the pulled position, its unpushed events after it
    /// (``PostgresTeamLog/replica(of:inOrder:position:into:)``), so that its seq N is the log's
    /// seq N. After `.reordered` the store object given is the old one: open the store again.
    private func keepInLogOrder(
        _ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String
    ) async throws -> TeamOrdering {
        let path = (self.path as NSString).standardizingPath
        let position = registry.remotes[name]!.pulled
        let inOrder = try await alignment(store, log, &registry, name)
        guard inOrder < position else { return .inOrder }
        // Checked first, so that a busy store costs no copy (and again at the swap).
        if store.isOpenElsewhere { return .deferred(after: inOrder) }
        let copyPath = path + ".replica"
        _ = try engine { try EventStore.settleSwap(of: path, copyPath: copyPath, mark: Self.replicaMark) }
        var replica = try await log.replica(of: store, inOrder: inOrder, position: position, into: copyPath)
        var next = registry
        next.remotes[name]!.inOrder = position
        for _ in 0..<5 {
            try save(next, at: copyPath)
            let upTo = replica.copiedUpTo
            switch try store.swap(with: replica.store, mark: Self.replicaMark, when: { seq, _ in seq == upTo }) {
            case .swapped:
                registry = next
                _ = try engine { try EventStore.settleSwap(of: path, copyPath: copyPath, mark: Self.replicaMark) }
                return .reordered(after: inOrder, fromLog: replica.reordered, own: replica.outbox, position: position)
            case .headMoved:
                try await log.appendOutbox(of: store, to: &replica)
            case .inUse:
                try? FileManager.default.removeItem(atPath: copyPath)
                return .deferred(after: inOrder)
            }
        }
        try? FileManager.default.removeItem(atPath: copyPath)
        throw RepositoryError(.storage, "the store kept changing while it was put in the log's order; stop the other strata processes and pull again")
    }
}
