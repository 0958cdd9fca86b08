/// A team log shared by several stores: one gapless, hash-chained history that each store
/// pushes its own events to and pulls the others' from. `remote` nil means the only one.
package protocol TeamRepository: Sendable {
    func remotes() throws -> TeamRemotes
    /// - Throws: ``RepositoryError`` `invalidQuery` for an address that is not a team log's.
    func addRemote(_ name: String, url: String) async throws -> TeamRemote
    func removeRemote(_ name: String) throws
    func status(remote: String?, verifyChain: Bool) async throws -> TeamStatus
    /// - Throws: ``RepositoryError`` `conflict` when a source's lease is held elsewhere.
    func push(remote: String?, batch: Int) async throws -> TeamPush
    func pull(remote: String?) async throws -> TeamPull
    /// Push, then pull, over one connection.
    func sync(remote: String?) async throws -> (TeamPush, TeamPull)
    /// Keeps pulling until the task is cancelled; returns the log's seq it stopped at.
    func follow(remote: String?, poll: Duration, report: @escaping @Sendable (TeamFollowEvent) -> Void) async throws -> (remote: String, position: UInt64)
    func lease(source: String, remote: String?, ttl: Double, force: Bool) async throws -> TeamLeaseGrant
    /// - Throws: ``RepositoryError`` `notFound` when this node does not hold the lease.
    func release(source: String, remote: String?) async throws -> String
    /// Runs `body` with the team log's events read as the store's own are.
    func reading<T: Sendable>(remote: String, _ body: (ReplayLog) async throws -> T) async throws -> T
}
