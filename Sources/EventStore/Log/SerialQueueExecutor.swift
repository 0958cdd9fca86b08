import Foundation

/// A serial executor that runs its jobs (and plain closures, see ``run(_:)``) on one dedicated OS
/// thread.
///
/// Blocking LMDB work — the cross-process write lock, `fsync` on commit — runs here. It must not
/// run on libdispatch's pool: on Linux Swift's cooperative executor is built on that pool, so a
/// writer blocked there (waiting for another process's write lock, say) would starve every task.
/// A write transaction also begins and ends on this one thread without suspending.
// Unchecked: its queue is guarded by a condition lock; only its own thread runs the jobs.
final class DedicatedThreadExecutor: SerialExecutor, @unchecked Sendable {
    /// A job of an actor on this executor, or plain work handed to the thread with ``run(_:)``.
    private enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private let condition = NSCondition()
    private var jobs: [Work] = []
    private var stopped = false

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Runs `work` on this thread after the work queued before it.
    func run(_ work: @escaping @Sendable () -> Void) {
        submit(.closure(work))
    }

    private func submit(_ work: Work) {
        condition.lock()
        jobs.append(work)
        condition.signal()
        condition.unlock()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Lets the thread finish its queued jobs and exit.
    func shutdown() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty && stopped { condition.unlock(); return }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for work in batch {
                switch work {
                case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
                case .closure(let closure): closure()
                }
            }
        }
    }
}
