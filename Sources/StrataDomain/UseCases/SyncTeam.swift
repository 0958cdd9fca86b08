/// Shares the log with a team: remotes, push, pull, follow, status and leases.
package struct SyncTeam: Sendable {
    let team: any TeamRepository

    package init(team: any TeamRepository) { self.team = team }

    package func remotes() throws -> TeamRemotes { try team.remotes() }
    package func add(_ name: String, url: String) async throws -> TeamRemote { try await team.addRemote(name, url: url) }
    package func remove(_ name: String) throws { try team.removeRemote(name) }
    package func status(remote: String?, verifyChain: Bool) async throws -> TeamStatus { try await team.status(remote: remote, verifyChain: verifyChain) }
    package func push(remote: String?, batch: Int = 1_000) async throws -> TeamPush { try await team.push(remote: remote, batch: batch) }
    package func pull(remote: String?) async throws -> TeamPull { try await team.pull(remote: remote) }

    /// Push, then pull.
    package func sync(remote: String?) async throws -> (TeamPush, TeamPull) { try await team.sync(remote: remote) }

    package func follow(remote: String?, poll: Duration, report: @escaping @Sendable (TeamFollowEvent) -> Void) async throws -> (
        remote: String, position: UInt64
    ) {
        try await team.follow(remote: remote, poll: poll, report: report)
    }

    package func lease(source: String, remote: String?, ttl: Double, force: Bool) async throws -> TeamLeaseGrant {
        try await team.lease(source: source, remote: remote, ttl: ttl, force: force)
    }

    /// Returns the remote's name.
    package func release(source: String, remote: String?) async throws -> String { try await team.release(source: source, remote: remote) }

    package func reading<T: Sendable>(remote: String, _ body: (ReplayLog) async throws -> T) async throws -> T { try await team.reading(remote: remote, body) }
}
