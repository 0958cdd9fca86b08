/// Fetches a source into the store.
public struct RefreshSource: Sendable {
    let remote: any RemoteRepository
    let sources: any SourceRepository

    public init(remote: any RemoteRepository, sources: any SourceRepository) {
        self.remote = remote
        self.sources = sources
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source, `network` when the list
    ///   could not be fetched (the failure is in the log; stored items are unchanged).
    public func callAsFunction(_ source: String, details: Bool = false, images: Bool = false) async throws -> RefreshResult {
        try await callAsFunction(source, RefreshRequest(details: details ? .all(maxAge: nil) : .none, images: images))
    }

    public func callAsFunction(_ source: String, _ request: RefreshRequest) async throws -> RefreshResult {
        _ = try await sources.source(named: source)
        return try await remote.refresh(source: source, request: request)
    }
}
