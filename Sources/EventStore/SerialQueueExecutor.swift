import Dispatch

/// A serial executor backed by a private dispatch queue (one OS thread at a time).
///
/// Blocking LMDB work — the cross-process write lock, `fsync` on commit — runs here, never on the
/// cooperative pool, and a write transaction begins and ends on one thread without suspending.
final class SerialQueueExecutor: SerialExecutor, @unchecked Sendable {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
