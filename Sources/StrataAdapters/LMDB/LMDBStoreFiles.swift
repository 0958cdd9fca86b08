import EventStore
import Foundation
import Logging
import Synchronization
import StrataData
package import StrataDomain

/// ``StoreFilesRepository`` over the store's directory: what can be done to it while it is closed,
/// and the copies that replace it.
package struct LMDBStoreFiles: StoreFilesRepository {
    let access: any StoreOpening
    /// Leases taken before a compaction applies a source's retention, as every write takes one.
    let leases: any SourceLeaseRepository

    package init(access: any StoreOpening, leases: any SourceLeaseRepository) {
        self.access = access
        self.leases = leases
    }

    /// The store's directory, standardized.
    package var path: String { (access.path as NSString).standardizingPath }

    package func exists() -> Bool { FileManager.default.fileExists(atPath: access.path + "/data.mdb") }

    package func verifyChain() throws -> StoreVerification {
        StoreVerification(try engine { try EventStore.verifyChain(at: access.path) })
    }

    package func compact(applyingRetention: Bool) async throws -> Replacement<Compaction> {
        let replacement = StoreReplacement(path: path, copyPath: path + ".compact", mark: ".strata-compact-swapped", resumable: false)
        if try replacement.finishEarlierSwap() { return .finishedEarlierSwap }
        // A copy left by a compaction stopped before its swap is not resumed: it is made again.
        let fm = FileManager.default
        if fm.fileExists(atPath: replacement.copyPath) { try fm.removeItem(atPath: replacement.copyPath) }
        let before = fileSize()
        let dropped = Mutex<[RetentionDrop]>([])
        let head = try await replacement.run(open: { try await access.opened() }) { store, _ in
            // Sources' retention first: what it drops is then left out of the copy.
            // Each source whose retention writes takes its lease first, as every write does.
            let retention = SourceRetention(store: store) { source in
                if let lease = try await leases.lease(source: source, force: false), let why = lease.unreachable {
                    access.logger.warning("could not lease \(source) in team log \(lease.remote) (\(why)); its retention is applied anyway")
                }
            }
            if applyingRetention {
                let applied = try await engine { try await retention.apply() }
                dropped.withLock { $0 = applied.map(RetentionDrop.init) }
            }
            return try await engine { try await store.compactedCopy(into: replacement.copyPath) }
        }
        var c = Compaction(path: path, events: head.seq, bytesBefore: before, bytesAfter: fileSize())
        c.retention = dropped.withLock { $0 }
        return .done(c)
    }

    package func rekey(toKeyFile keyFile: String?, progress: @escaping @Sendable (CatchUpProgress) -> Void) async throws -> Replacement<LogHead> {
        let replacement = StoreReplacement(path: path, copyPath: path + ".rekey", mark: ".strata-rekey-swapped", resumable: true)
        if try replacement.finishEarlierSwap() { return .finishedEarlierSwap }
        var newKey: StoreKey?
        if let keyFile {
            if !FileManager.default.fileExists(atPath: keyFile) { try createKey(at: keyFile) }
            newKey = try engine { try StoreKey.load(file: keyFile) }
        }
        // The copy goes on from where a stopped rekey left it, and takes the events appended
        // to the store while it was made.
        let head = try await replacement.run(open: { try await access.opened() }) { [newKey] store, first in
            try await engine {
                guard first else { return try await store.copy(into: replacement.copyPath, key: newKey) }
                return try await store.copy(into: replacement.copyPath, key: newKey) { applied, head in
                    progress(CatchUpProgress(projection: "log", applied: applied, head: head))
                }
            }
        }
        return .done(LogHead(seq: head.seq, hash: head.hash))
    }

    package func createKey(at file: String) throws {
        let dir = (file as NSString).deletingLastPathComponent
        if !dir.isEmpty, !FileManager.default.fileExists(atPath: dir) {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // `storage`, not `key`: nothing is wrong with a store's key.
        do { try StoreKey.generate().write(toNewFile: file) } catch { throw RepositoryError(.storage, "\(error)", cause: error) }
    }

    private func fileSize() -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb"))?[.size] as? Int) ?? 0
    }
}

/// Puts a copy of a store in the store's place, as rekey and compaction do: the copy is made
/// beside the store (`copyPath`), then swapped in by ``EventStore/swap(with:mark:carrying:when:)``
/// once it ends at the store's head, and the old directory is removed. The team's remotes
/// (`remotes.json`) and the sources' secrets go along.
///
/// The two differ in what a stopped run leaves: a `resumable` copy (rekey's) is kept when the
/// replacement stops and brought up to date when the store moved on; another (compaction's) is
/// removed, and made again from the start.
struct StoreReplacement {
    /// The store's directory, standardized.
    let path: String
    let copyPath: String
    /// The file a swap leaves in the store's directory until its cleanup is done.
    let mark: String
    let resumable: Bool
    /// How many times the copy is made (or brought up to date) while the store keeps moving on.
    var tries = 5

    /// Cleans up after an earlier run that swapped the stores and stopped before it removed the
    /// old one; true if there was one (nothing else is left to do).
    package func finishEarlierSwap() throws -> Bool {
        guard FileManager.default.fileExists(atPath: path + "/" + mark) else { return false }
        _ = try engine { try EventStore.settleSwap(of: path, copyPath: copyPath, mark: mark) }
        return true
    }

    /// Opens the store, makes the copy with `makeCopy(store, first)` (called again, with the
    /// previous copy closed, after an event was appended to the store meanwhile), swaps it in and
    /// removes the old store. Both stores are closed when it returns. Returns the head of the
    /// store now in place.
    package func run(
        open: () async throws -> EventStore,
        makeCopy: (_ store: EventStore, _ first: Bool) async throws -> EventStore
    ) async throws -> (seq: UInt64, hash: String) {
        let fm = FileManager.default
        // This function holds the only references to both stores: each is closed (set to nil)
        // before its directory is touched, since one environment must not be open twice in a
        // process and a removed one must not stay mapped.
        var store: EventStore? = try await open()
        var copy: EventStore? = try await makeCopy(store!, true)
        func dropCopy() throws {
            copy = nil
            if !resumable, fm.fileExists(atPath: copyPath) { try fm.removeItem(atPath: copyPath) }
        }
        for attempt in 1...tries {
            let theirs = try await engine { try await copy!.head() }
            let outcome = try engine {
                try store!.swap(with: copy!, mark: mark, carrying: ["remotes.json", SourceSecrets.fileName], when: { $0 == theirs.seq && $1 == theirs.hash })
            }
            switch outcome {
            case .swapped:
                // Neither object is used after a swap: the head is the one the swap checked.
                copy = nil
                store = nil
                try fm.removeItem(atPath: copyPath)
                try fm.removeItem(atPath: path + "/" + mark)
                return theirs
            case .headMoved:
                try dropCopy()
                if attempt < tries { copy = try await makeCopy(store!, false) }
            case .inUse:
                try dropCopy()
                throw RepositoryError(
                    .storage,
                    "the store is open in another strata process (a browser, a server, a follow); stop it and run the command again"
                        + (resumable ? ": the copy made so far is kept" : ""))
            }
        }
        throw RepositoryError(.storage, "the store kept changing while it was copied; stop the other strata processes and run the command again")
    }
}
