/// Fetches a source into the store.
package struct RefreshSource: Sendable {
    let remote: any RemoteRepository
    let sources: any SourceRepository
    let leases: (any SourceLeaseRepository)?
    let notifications: QueueNotifications?

    package init(
        remote: any RemoteRepository, sources: any SourceRepository, leases: (any SourceLeaseRepository)? = nil, notifications: QueueNotifications? = nil
    ) {
        self.remote = remote
        self.sources = sources
        self.leases = leases
        self.notifications = notifications
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `network` when the list
    ///   could not be fetched (the failure is in the log; stored items are unchanged).
    package func callAsFunction(_ source: String, details: Bool = false, images: Bool = false) async throws -> RefreshResult {
        try await callAsFunction(source, RefreshRequest(details: details ? .all(maxAge: nil) : .none, images: images))
    }

    /// In a store that shares a team log, the source's lease is taken (or renewed) first: a
    /// source leased to another node is not fetched (``RepositoryError`` `.conflict`) unless
    /// `request.takeLease`.
    package func callAsFunction(_ source: String, _ request: RefreshRequest) async throws -> RefreshResult {
        _ = try await sources.source(named: source)
        let lease = try await leases?.lease(source: source, force: request.takeLease)
        var result = try await remote.refresh(source: source, request: request)
        result.lease = lease
        // The pass's changes against the alerts. A failure here loses nothing: the pass is in the
        // log and the next evaluation (the next fetch, `watch`, `alert deliver`) matches it.
        result.notificationsQueued = (try? await notifications?(source: source)) ?? 0
        return result
    }
}
