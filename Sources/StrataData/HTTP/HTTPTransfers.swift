import Foundation

/// One finished request of an ``HTTPTransfers`` batch: its index in the batch, and the response
/// (any status) or why no complete response arrived.
public struct HTTPCompletion: Sendable {
    public var index: Int
    public var result: Result<HTTPResponse, FetchError>

    public init(index: Int, result: Result<HTTPResponse, FetchError>) {
        self.index = index
        self.result = result
    }
}

/// A batch of requests that the HTTP client runs by itself, at most `concurrency` at a time,
/// handing completions to one consumer in completion order, several per wake-up.
///
/// The client starts the next request the moment one finishes, without a round trip through the
/// consumer, so `concurrency` transfers stay in flight however long the consumer takes per
/// response. The consumer, in turn, wakes once per group of completions instead of once per
/// response. While `backlog` completions wait unconsumed no new request starts, so a slow
/// consumer bounds memory instead of buffering the whole batch.
///
/// A request can be run again: ``retryLater(_:)`` (at once, when its failure is seen) holds the
/// batch open, and ``resubmit(_:)`` (after the back-off) queues it for a free slot. Cancelling the
/// consuming task, or ``cancel()``, drops queued requests and aborts those in flight.
///
/// A batch can also grow: after ``keepOpen()`` (called before the first ``next()``), ``add(_:)``
/// queues more requests while the first ones run, and the consumer sees the end only once
/// ``close()`` has been called and everything added has finished.
public final class HTTPTransfers: AsyncSequence, AsyncIteratorProtocol, @unchecked Sendable {
    public typealias Element = [HTTPCompletion]

    public let concurrency: Int
    /// Unconsumed completions at which no further request starts.
    public let backlog: Int

    private let lock = NSLock()
    private var _requests: [HTTPRequest]
    /// More requests may still be added (``keepOpen()`` until ``close()``).
    private var accepting = false
    /// Indices to start, in order; `head` is the next. Resubmitted indices are appended.
    private var queue: [Int]
    private var head = 0
    private var inFlight = 0
    private var awaitingRetry = 0
    private var ready: [HTTPCompletion] = []
    private var consumer: CheckedContinuation<[HTTPCompletion]?, Never>?
    private var cancelled = false
    /// The consumer has been told there is nothing more (its `next()` returned nil).
    private var drained = false
    /// Set when `startable` held back for the backlog: the consumer then wakes the producer.
    private var throttled = false
    /// A ``nudge()`` the consumer has not seen yet.
    private var nudged = false
    private let wake: @Sendable () -> Void

    /// - Parameter wake: called, outside any lock, when a request may have become startable or
    ///   the batch was cancelled; the producer then calls ``startable()`` or sees ``isCancelled``.
    public init(requests: [HTTPRequest], concurrency: Int, wake: @escaping @Sendable () -> Void) {
        self._requests = requests
        self.concurrency = Swift.max(1, concurrency)
        self.backlog = Swift.max(16, 2 * Swift.max(1, concurrency))
        self.queue = Array(requests.indices)
        self.wake = wake
    }

    /// Nothing left to start, run, retry: every request has its final completion. Lock held.
    private var allDone: Bool { !accepting && head == queue.count && inFlight == 0 && awaitingRetry == 0 }

    /// Request `index` (what the producer starts).
    public func request(at index: Int) -> HTTPRequest {
        lock.lock(); defer { lock.unlock() }
        return _requests[index]
    }

    // MARK: Growing

    /// Lets the batch grow with ``add(_:)`` until ``close()``. Call it before the first ``next()``.
    public func keepOpen() {
        lock.lock(); accepting = true; lock.unlock()
    }

    /// Queues `requests` after those already added; returns their indices. Nothing is added to a
    /// closed or cancelled batch (an empty range).
    @discardableResult
    public func add(_ requests: [HTTPRequest]) -> Range<Int> {
        lock.lock()
        guard accepting, !cancelled else { lock.unlock(); return 0..<0 }
        let first = _requests.count
        _requests += requests
        queue += first..<_requests.count
        lock.unlock()
        if !requests.isEmpty { wake() }
        return first..<(first + requests.count)
    }

    /// No more requests will be added: the consumer sees the end once the added ones finish.
    public func close() {
        lock.lock()
        accepting = false
        let waiting = (allDone && ready.isEmpty) ? consumer : nil
        if waiting != nil { consumer = nil; drained = true }
        lock.unlock()
        waiting?.resume(returning: nil)
        if waiting != nil { wake() }
    }

    // MARK: Producer (the HTTP client)

    /// Claims the requests to start now: up to the free slots, none while the backlog is full.
    public func startable() -> [Int] {
        lock.lock()
        defer { lock.unlock() }
        guard !cancelled else { return [] }
        var out: [Int] = []
        while head < queue.count && inFlight < concurrency {
            guard ready.count + inFlight < backlog else { throttled = true; break }
            out.append(queue[head])
            head += 1
            inFlight += 1
        }
        if head == queue.count && head > 0 { queue.removeAll(keepingCapacity: true); head = 0 }
        return out
    }

    /// Hands finished requests to the consumer (one wake-up for all of them).
    public func complete(_ completions: [HTTPCompletion]) {
        guard !completions.isEmpty else { return }
        lock.lock()
        inFlight -= completions.count
        guard !cancelled else { lock.unlock(); return }
        ready.append(contentsOf: completions)
        let waiting = consumer
        var out: [HTTPCompletion] = []
        if waiting != nil { consumer = nil; out = ready; ready.removeAll() }
        lock.unlock()
        waiting?.resume(returning: out)
    }

    /// Every request has been started (none waits for a slot or a retry, and none will be
    /// added): only those in flight are left.
    public var allStarted: Bool {
        lock.lock(); defer { lock.unlock() }
        return !accepting && head == queue.count && awaitingRetry == 0
    }

    public var isCancelled: Bool {
        lock.lock(); defer { lock.unlock() }
        return cancelled
    }

    /// The consumer has read the last completion, or the batch was cancelled: the producer can
    /// forget it. (Until then a completion it has not looked at may still be retried.)
    public var isFinished: Bool {
        lock.lock(); defer { lock.unlock() }
        return cancelled || drained
    }

    // MARK: Consumer

    public func makeAsyncIterator() -> HTTPTransfers { self }

    /// Wakes the consumer with no completions (an empty group), at once or at its next call to
    /// ``next()``: for a consumer that acts on time passing, such as a group commit waiting for
    /// its moment while a slow transfer is the only one left.
    public func nudge() {
        lock.lock()
        let waiting = consumer
        consumer = nil
        if waiting == nil { nudged = true }
        lock.unlock()
        waiting?.resume(returning: [])
    }

    /// The completions gathered since the last call (waiting for at least one, or a ``nudge()``:
    /// then none), or nil once every request has finished for good or the batch was cancelled.
    public func next() async -> [HTTPCompletion]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[HTTPCompletion]?, Never>) in
                lock.lock()
                if !ready.isEmpty {
                    let out = ready
                    ready.removeAll()
                    nudged = false
                    let wakeProducer = throttled
                    throttled = false
                    lock.unlock()
                    if wakeProducer { wake() }
                    c.resume(returning: out)
                } else if cancelled || allDone {
                    drained = true
                    lock.unlock()
                    wake()
                    c.resume(returning: nil)
                } else if nudged {
                    nudged = false
                    lock.unlock()
                    c.resume(returning: [])
                } else {
                    consumer = c
                    let wakeProducer = throttled
                    throttled = false
                    lock.unlock()
                    if wakeProducer { wake() }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Keeps the batch open for request `index`, to be ``resubmit(_:)``ted after a back-off.
    public func retryLater(_ index: Int) {
        lock.lock(); awaitingRetry += 1; lock.unlock()
    }

    /// Queues request `index` again (after ``retryLater(_:)``); it starts when a slot is free.
    public func resubmit(_ index: Int) {
        lock.lock()
        awaitingRetry -= 1
        if !cancelled { queue.append(index) }
        lock.unlock()
        wake()
    }

    /// Gives up a ``retryLater(_:)`` without running the request again.
    public func abandonRetry(_ index: Int) {
        lock.lock()
        awaitingRetry -= 1
        let waiting = (allDone && ready.isEmpty) ? consumer : nil
        if waiting != nil { consumer = nil; drained = true }
        lock.unlock()
        waiting?.resume(returning: nil)
        if waiting != nil { wake() }
    }

    /// Drops queued requests and tells the producer to abort those in flight; the consumer's
    /// next call returns nil.
    public func cancel() {
        lock.lock()
        guard !cancelled else { lock.unlock(); return }
        cancelled = true
        ready.removeAll()
        let waiting = consumer
        consumer = nil
        lock.unlock()
        waiting?.resume(returning: nil)
        wake()
    }
}
