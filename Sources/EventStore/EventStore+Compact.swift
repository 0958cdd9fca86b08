import Foundation
import LMDB

extension EventStore {
    /// Writes a compacted copy of the store into `directory` (created; it must not exist) and
    /// opens it with the store's options: one read snapshot, without the pages that transactions
    /// freed (LMDB reuses them but never gives them back to the file system), each table's
    /// entries appended in key order so its pages are full (``Environment/copyPacked(to:)``). The copy holds the same events, bodies and
    /// projection rows, byte for byte; an encrypted store's copy stays under its key. Swap it in
    /// with ``swap(with:mark:carrying:when:)``, comparing its head.
    public func compactedCopy(into directory: String) async throws -> EventStore {
        let fm = FileManager.default
        guard !fm.fileExists(atPath: directory) else {
            throw EventStoreError(code: .storage, message: "\(directory) exists already; remove it first")
        }
        do {
            try fm.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            try environment.copyPacked(to: directory)
        } catch {
            try? fm.removeItem(atPath: directory)
            throw EventStoreError.wrap(error, "could not write a compacted copy at \(directory)")
        }
        return try await EventStore.open(at: directory, projections: projections, options: options)
    }
}
