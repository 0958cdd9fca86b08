/// Erasure of items from the store (`strata forget`), and what reads of them answer after.
package protocol ErasureRepository: Sendable {
    /// Forgets `ids` of `source`: their content leaves every stored version, the log records
    /// that and why.
    /// - Throws: ``RepositoryError`` `notFound` when no id names a stored item.
    func forget(source: String, ids: [String], reason: String, by actor: String) async throws -> ForgetResult
    /// The erasure of `id`, if it was forgotten.
    func erasure(source: String, id: String) async throws -> ErasureRecord?
    /// Finishes erasures recorded but not applied (a process killed part-way, an erasure pulled
    /// from a team log); returns how many.
    func applyPending() async throws -> Int
    /// Applies `source`'s retention now unless it was applied less than `interval` seconds ago;
    /// nil when it has none, was not due, or dropped nothing new.
    func applyRetention(source: String, unlessAppliedWithin interval: Double) async throws -> RetentionDrop?
}
