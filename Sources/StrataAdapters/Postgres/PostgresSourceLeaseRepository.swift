import Foundation
package import Logging
package import StrataDomain
import TeamLog

/// ``SourceLeaseRepository`` over the team logs named in the store's `remotes.json`: before a
/// fetch, the source's lease is taken or renewed in each (``PostgresTeamLog/acquireLease(stream:node:ttl:force:)``)
/// and the token kept in the registry, where a push finds it. A store with no remote costs one
/// file lookup and never writes the file.
package struct PostgresSourceLeaseRepository: SourceLeaseRepository {
    let storePath: String
    let ttl: Double
    let timeout: Duration
    let logger: Logger

    package init(storePath: String, ttl: Double, timeout: Duration, logger: Logger) {
        self.storePath = storePath
        self.ttl = ttl
        self.timeout = timeout
        self.logger = logger
    }

    package func lease(source: String, force: Bool) async throws -> SourceLease? {
        var registry: RemoteRegistry
        do { registry = try RemoteRegistry.load(store: storePath) } catch let e as TeamLogError {
            throw RepositoryError(.storage, e.message)
        }
        guard !registry.remotes.isEmpty else { return nil }
        // The lease of the first remote that answered; else why the last one did not.
        var granted: SourceLease?, unreachable: SourceLease?
        for name in registry.remotes.keys.sorted() {
            let remote = registry.remotes[name]!
            let log: PostgresTeamLog
            do {
                log = try PostgresTeamLog(location: TeamLogLocation(url: remote.url), operationTimeout: timeout, logger: logger)
            } catch let e as TeamLogError {
                unreachable = SourceLease(remote: name, token: nil, unreachable: e.message)
                continue
            }
            do {
                let grant = try await log.acquireLease(stream: source, node: registry.node, ttl: ttl, force: force)
                await log.close()
                registry.remotes[name]!.leases = (remote.leases ?? [:]).merging([source: grant.token]) { $1 }
                granted = granted ?? SourceLease(remote: name, token: grant.token, takenFrom: grant.takenFrom.map(TeamLogNode.short), forced: grant.forced)
            } catch let e as TeamLogError where e.code == .fenced {
                await log.close()
                // The leases taken in the remotes before this one are kept.
                try? registry.save(store: storePath)
                throw e.repositoryError("team log \(name)")
            } catch let e as TeamLogError {
                await log.close()
                unreachable = SourceLease(remote: name, token: nil, unreachable: e.message)
            }
        }
        do { try registry.save(store: storePath) } catch let e as TeamLogError { throw RepositoryError(.storage, e.message) }
        // A remote out of reach is said even when another one granted the lease.
        return unreachable ?? granted
    }
}
