import Foundation

/// The store directory's own lock, held by every open store.
///
/// An open store holds a shared `flock(2)` on `DIR/strata.lock` for its life (a `flock` belongs to
/// the open file, so LMDB's own `fcntl` locks on `lock.mdb` are untouched). An operation that puts
/// another directory in the store's place (``EventStore/swap(with:mark:carrying:when:)``: a
/// rekey, a replica put in the team log's order) swaps only while it holds that lock exclusively,
/// i.e. while no other process has the store open: such a process would go on reading and writing
/// the directory that moved away, and what it wrote would be lost.
final class StoreOpenLock: Sendable {
    private let fd: Int32

    /// Nil when the lock file cannot be made (a read-only directory): nothing can be swapped there.
    init?(directory: String) {
        let file = directory + "/" + Self.fileName
        while true {
            let fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            guard flock(fd, LOCK_SH) == 0 else { close(fd); return nil }
            // A swap that held the lock meanwhile moved this file away with the old directory:
            // the lock is taken again on the file now at the path.
            var held = stat(), there = stat()
            if fstat(fd, &held) == 0, stat(file, &there) == 0, held.st_ino == there.st_ino, held.st_dev == there.st_dev {
                self.fd = fd
                return
            }
            close(fd)
        }
    }

    deinit { close(fd) }

    static let fileName = "strata.lock"

    /// `body`'s value, run while no other process has the store open; nil (and `body` not run)
    /// when another one has.
    func exclusively<T>(_ body: () throws -> T) rethrows -> T? {
        // Converting a shared lock drops it first; a refusal leaves none, so it is taken again.
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            _ = flock(fd, LOCK_SH)
            return nil
        }
        defer { _ = flock(fd, LOCK_SH) }
        return try body()
    }
}

/// How a ``EventStore/swap(with:mark:carrying:when:)`` ended.
public enum StoreSwapOutcome: Sendable, Equatable {
    /// The copy is now at the store's path, and the store at the copy's.
    case swapped
    /// `when` refused the store's head (an event was appended after the copy was made).
    case headMoved
    /// Another process has the store open; nothing was changed.
    case inUse
}

extension EventStore {
    /// Puts `copy`'s directory in the store's place, and the store's in the copy's, in one step
    /// (`renameat2(RENAME_EXCHANGE)`), holding the log's write lock (no process appends meanwhile)
    /// and the directory's lock exclusively (no other process has the store open). Before the
    /// swap, the `carrying` files beside the LMDB environment are copied into the copy's directory
    /// and an empty file named `mark` is created there: after a crash, the mark at the store's
    /// path says the swap happened and only the removal of the old directory (at the copy's path)
    /// is left. `when` gets the store's head (seq, hash hex) and says whether the copy holds
    /// everything up to it. After `.swapped`, neither object may be used again: close both.
    public func swap(
        with copy: EventStore, mark: String, carrying files: [String] = [],
        when current: (_ headSeq: UInt64, _ headHash: String) -> Bool
    ) throws -> StoreSwapOutcome {
        guard let openLock else { return .inUse }
        let fm = FileManager.default
        return try holdingWriteLock { seq, hash in
            guard current(seq, hash) else { return .headMoved }
            return try openLock.exclusively { () throws -> StoreSwapOutcome in
                for file in files where fm.fileExists(atPath: path + "/" + file) {
                    try? fm.removeItem(atPath: copy.path + "/" + file)
                    try fm.copyItem(atPath: path + "/" + file, toPath: copy.path + "/" + file)
                }
                guard fm.createFile(atPath: copy.path + "/" + mark, contents: Data()) else {
                    throw EventStoreError(code: .storage, message: "could not write \(copy.path)/\(mark)")
                }
                guard Self.exchange(path, copy.path) else {
                    let reason = String(cString: strerror(errno))
                    try? fm.removeItem(atPath: copy.path + "/" + mark)
                    throw EventStoreError(
                        code: .storage, message: "could not swap \(copy.path) and \(path): \(reason); nothing was changed, run the command again")
                }
                return .swapped
            } ?? .inUse
        }
    }

    /// Whether another process has the store open now (so a swap would be refused).
    public var isOpenElsewhere: Bool {
        guard let openLock else { return true }
        return openLock.exclusively { true } == nil
    }

    /// Swaps two directories in one step: `renameat2(RENAME_EXCHANGE)` (Linux 3.15, glibc 2.28),
    /// looked up at run time since Glibc's module map does not declare it.
    static func exchange(_ a: String, _ b: String) -> Bool {
        typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { errno = ENOSYS; return false }
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        let renameExchange: UInt32 = 1 << 1
        return renameat2(AT_FDCWD, a, AT_FDCWD, b, renameExchange) == 0
    }

    /// Finishes or forgets a swap of `path` with `copyPath` that a stopped process left: when
    /// `path` holds `mark` the swap happened, so the old directory at `copyPath` and the mark are
    /// removed (true); otherwise a copy left at `copyPath` never replaced anything and is removed
    /// (false).
    /// - Throws: ``EventStoreError`` when the copy is open in another process (it is being made).
    @discardableResult
    public static func settleSwap(of path: String, copyPath: String, mark: String) throws -> Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: path + "/" + mark) {
            if fm.fileExists(atPath: copyPath) { try fm.removeItem(atPath: copyPath) }
            try fm.removeItem(atPath: path + "/" + mark)
            return true
        }
        guard fm.fileExists(atPath: copyPath) else { return false }
        let fd = Glibc.open(copyPath + "/" + StoreOpenLock.fileName, O_RDWR | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                throw EventStoreError(code: .storage, message: "another strata process is writing \(copyPath); wait for it to finish")
            }
        }
        try fm.removeItem(atPath: copyPath)
        return false
    }
}
