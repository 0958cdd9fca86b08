import Foundation

/// Forgets items: every stored version of their content is erased, the log keeps the fact.
package struct ForgetItems: Sendable {
    let erasures: any ErasureRepository
    let sources: any SourceRepository
    let lease: LeaseSourceForWrite

    package init(erasures: any ErasureRepository, sources: any SourceRepository, lease: LeaseSourceForWrite = .none) {
        self.erasures = erasures
        self.sources = sources
        self.lease = lease
    }

    /// - Throws: ``RepositoryError`` `notFound` for an unknown source or ids never stored,
    ///   `invalidQuery` for no ids or an empty reason, `conflict` when another node leases the
    ///   source.
    package func callAsFunction(source name: String, ids: [String], reason: String, by actor: String) async throws -> ForgetResult {
        let trimmed = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !ids.isEmpty else { throw RepositoryError(.invalidQuery, "name at least one id to forget") }
        guard !trimmed.isEmpty else { throw RepositoryError(.invalidQuery, "say why the items are forgotten: the reason is kept in the log") }
        _ = try await sources.source(named: name)
        try await lease(name)
        return try await erasures.forget(source: name, ids: Array(Set(ids)).sorted(), reason: trimmed, by: actor)
    }
}
