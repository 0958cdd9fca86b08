import EventStore
import Foundation
import StrataData

/// Puts a copy of a store in the store's place, as `rekey` and `compact` do: the copy is made
/// beside the store (`copyPath`), then swapped in by ``EventStore/swap(with:mark:carrying:when:)``
/// once it ends at the store's head, and the old directory is removed. The team's remotes
/// (`remotes.json`) go along.
///
/// The two commands differ in what a stopped run leaves: a `resumable` copy (rekey's) is kept
/// when the replacement stops and brought up to date when the store moved on; another (compact's)
/// is removed, and made again from the start.
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
    func finishEarlierSwap() throws -> Bool {
        guard FileManager.default.fileExists(atPath: path + "/" + mark) else { return false }
        try EventStore.settleSwap(of: path, copyPath: copyPath, mark: mark)
        return true
    }

    /// Opens the store, makes the copy with `makeCopy(store, first)` (called again, with the
    /// previous copy closed, after an event was appended to the store meanwhile), swaps it in and
    /// removes the old store. Both stores are closed when it returns. Returns the head of the
    /// store now in place.
    func run(
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
            let theirs = try await copy!.head()
            switch try store!.swap(with: copy!, mark: mark, carrying: ["remotes.json", SourceSecrets.fileName], when: { $0 == theirs.seq && $1 == theirs.hash })
            {
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
                throw CLIError(
                    "the store is open in another strata process (a browser, a server, a follow); stop it and run the command again"
                        + (resumable ? ": the copy made so far is kept" : ""))
            }
        }
        throw CLIError("the store kept changing while it was copied; stop the other strata processes and run the command again")
    }
}
