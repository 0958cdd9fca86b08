/// The step every write to a source takes first in a store that shares a team log: the source's
/// lease is taken (or renewed), as a fetch does, so what the write appends can be pushed. A lease
/// another node holds and has not let expire refuses the write before anything is appended; a
/// released or expired one is taken; a team log out of reach lets the write go on, and `report`
/// says so (its events may be refused at push if another node leases the source meanwhile).
package struct LeaseSourceForWrite: Sendable {
    let leases: (any SourceLeaseRepository)?
    let report: @Sendable (_ source: String, _ lease: SourceLease) -> Void

    /// No team log: nothing to lease.
    package static let none = LeaseSourceForWrite(leases: nil) { _, _ in }

    package init(leases: (any SourceLeaseRepository)?, report: @escaping @Sendable (_ source: String, _ lease: SourceLease) -> Void) {
        self.leases = leases
        self.report = report
    }

    /// - Throws: ``RepositoryError`` `.conflict` when another node holds a live lease on `source`.
    package func callAsFunction(_ source: String) async throws {
        guard let leases, let lease = try await leases.lease(source: source, force: false) else { return }
        report(source, lease)
    }
}
