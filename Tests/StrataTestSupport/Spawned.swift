import CTestSpawn
public import Foundation
import Synchronization

/// A child process started with `posix_spawn`, with the parts of `Foundation.Process` the tests
/// use. Not `Process`: its `run()` on Linux (swift-corelibs-foundation up to Swift 6.3) reads past
/// a `dirent` while it lists `/proc/self/fd` and crashes now and then when the test process holds
/// many descriptors (swift-corelibs-foundation#5472), which a suite spawning hundreds of
/// children does.
public final class Spawned: @unchecked Sendable {
    public let processIdentifier: Int32
    /// Kept as `Process` keeps them: a caller that drops a pipe must not close its read end under
    /// the child (whose next write would then fail with EPIPE).
    private let pipes: [Pipe]
    /// The wait status once reaped (one waiter reaps; the others read it).
    private let reaped = Mutex<Int32?>(nil)
    private let reaping = Mutex(false)

    /// Starts `executable` with `arguments` and `environment`; stdin from `stdin`'s read end (or
    /// /dev/null), stdout and stderr into the pipes' write ends, nothing else inherited.
    public init(
        executable: String, arguments: [String], environment: [String: String], stdin: Pipe?, stdout: Pipe?, stderr: Pipe?, directory: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            posix_spawn_file_actions_adddup2(&actions, stdin.fileHandleForReading.fileDescriptor, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout.fileHandleForWriting.fileDescriptor, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if let stderr {
            posix_spawn_file_actions_adddup2(&actions, stderr.fileHandleForWriting.fileDescriptor, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        if let directory { cts_addchdir(&actions, directory) }
        cts_addclosefrom(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executable): \(String(cString: strerror(rc)))"]) }
        processIdentifier = pid
        pipes = [stdin, stdout, stderr].compactMap { $0 }
        // The child has its copies: the parent's write ends would keep readers from seeing the end.
        try stdout?.fileHandleForWriting.close()
        try stderr?.fileHandleForWriting.close()
        try stdin?.fileHandleForReading.close()
    }

    /// Reaps the child, blocking when `block`; true once it has exited. One caller at a time runs
    /// `waitpid` (a second would find no child); a blocking caller that finds another reaping
    /// waits for it and tries again, since that one may have been a non-blocking look.
    @discardableResult
    private func reap(block: Bool) -> Bool {
        while true {
            if reaped.withLock({ $0 }) != nil { return true }
            let mine = reaping.withLock { r in
                if r { return false }
                r = true
                return true
            }
            guard mine else {
                if !block { return false }
                usleep(1_000)
                continue
            }
            let exited = waitOnce(block: block)
            reaping.withLock { $0 = false }
            if exited || !block { return exited }
        }
    }

    /// One `waitpid` (retried on EINTR); the caller holds `reaping`.
    private func waitOnce(block: Bool) -> Bool {
        var status: Int32 = 0
        while true {
            let r = waitpid(processIdentifier, &status, block ? 0 : WNOHANG)
            if r == processIdentifier {
                reaped.withLock { $0 = status }
                return true
            }
            if r == 0 { return false }
            if errno == EINTR { continue }
            reaped.withLock { $0 = 0 }
            return true
        }
    }

    /// SIGKILLs the child unless it has been reaped (so never another process given its pid).
    public func killUnlessReaped() {
        reaped.withLock { if $0 == nil { _ = kill(processIdentifier, SIGKILL) } }
    }

    /// Arms a watchdog that SIGKILLs the child when it is still running after `seconds`; the
    /// returned watchdog says whether it had to.
    public func watchdog(seconds: Double) -> Watchdog {
        let dog = Watchdog()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            guard dog.arm() else { return }
            killUnlessReaped()
        }
        return dog
    }

    /// Waits for the child at most `seconds`, then SIGKILLs it; false when it had to.
    public func waitUntilExit(seconds: Double) -> Bool {
        let dog = watchdog(seconds: seconds)
        waitUntilExit()
        return !dog.disarm()
    }

    public var isRunning: Bool { !reap(block: false) }
    public func waitUntilExit() { reap(block: true) }
    public func terminate() { kill(processIdentifier, SIGTERM) }

    public enum TerminationReason { case exit, uncaughtSignal }

    /// Whether it exited or a signal ended it.
    public var terminationReason: TerminationReason {
        reap(block: true)
        return (reaped.withLock { $0 } ?? 0) & 0x7F == 0 ? .exit : .uncaughtSignal
    }

    /// The exit status, or the signal that ended it (as `Process` reports them).
    public var terminationStatus: Int32 {
        reap(block: true)
        let s = reaped.withLock { $0 } ?? 0
        let signal = s & 0x7F
        return signal == 0 ? (s >> 8) & 0xFF : signal
    }
}

/// A deadline for a child: `disarm` once the child is done says whether the deadline had
/// passed (and the child was killed) first.
public final class Watchdog: Sendable {
    /// nil while armed; true once fired, false once disarmed.
    private let state = Mutex<Bool?>(nil)

    /// Fires unless disarmed; true when it did.
    public func arm() -> Bool {
        state.withLock { s in
            if s != nil { return false }
            s = true
            return true
        }
    }

    /// Disarms it; true when it had already fired.
    public func disarm() -> Bool {
        state.withLock { s in
            if s == nil { s = false }
            return s == true
        }
    }
}
