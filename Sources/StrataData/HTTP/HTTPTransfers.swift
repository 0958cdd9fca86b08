import Foundation
import Synchronization

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
public final class HTTPTransfers: AsyncSequence, AsyncIteratorProtocol, Sendable {
    public typealias Element = [HTTPCompletion]

    public let concurrency: Int
    /// Unconsumed completions at which no further request starts.
    public let backlog: Int

    private struct State {
        var requests: [HTTPRequest]
        /// More requests may still be added (``keepOpen()`` until ``close()``).
        var accepting = false
        /// Indices to start, in order; `head` is the next. Resubmitted indices are appended.
        var queue: [Int]
        var head = 0
        var inFlight = 0
        var awaitingRetry = 0
        var ready: [HTTPCompletion] = []
        var consumer: CheckedContinuation<[HTTPCompletion]?, Never>?
        var cancelled = false
        /// The consumer has been told there is nothing more (its `next()` returned nil).
        var drained = false
        /// Set when `startable` held back for the backlog: the consumer then wakes the producer.
        var throttled = false
        /// A ``nudge()`` the consumer has not seen yet.
        var nudged = false

        /// Nothing left to start, run, retry: every request has its final completion.
        var allDone: Bool { !accepting && head == queue.count && inFlight == 0 && awaitingRetry == 0 }

        /// The waiting consumer, taken when everything is done and nothing is left to hand over:
        /// it is then told the end.
        mutating func takeConsumerAtEnd() -> CheckedContinuation<[HTTPCompletion]?, Never>? {
            guard allDone && ready.isEmpty, let waiting = consumer else { return nil }
            consumer = nil
            drained = true
            return waiting
        }
    }

    // Continuations are resumed and `wake` called outside the lock: either may run code that
    // comes back to the batch.
    private let state: Mutex<State>
    private let wake: @Sendable () -> Void

    /// - Parameter wake: called, outside any lock, when a request may have become startable or
    ///   the batch was cancelled; the producer then calls ``startable()`` or sees ``isCancelled``.
    public init(requests: [HTTPRequest], concurrency: Int, wake: @escaping @Sendable () -> Void) {
        self.concurrency = Swift.max(1, concurrency)
        self.backlog = Swift.max(16, 2 * Swift.max(1, concurrency))
        self.state = Mutex(State(requests: requests, queue: Array(requests.indices)))
        self.wake = wake
    }

    /// Request `index` (what the producer starts).
    public func request(at index: Int) -> HTTPRequest {
        state.withLock { $0.requests[index] }
    }

    // MARK: Growing

    /// Lets the batch grow with ``add(_:)`` until ``close()``. Call it before the first ``next()``.
    public func keepOpen() {
        state.withLock { $0.accepting = true }
    }

    /// Queues `requests` after those already added; returns their indices. Nothing is added to a
    /// closed or cancelled batch (an empty range).
    @discardableResult
    public func add(_ requests: [HTTPRequest]) -> Range<Int> {
        let first: Int? = state.withLock { s in
            guard s.accepting, !s.cancelled else { return nil }
            let first = s.requests.count
            s.requests += requests
            s.queue += first..<s.requests.count
            return first
        }
        guard let first else { return 0..<0 }
        if !requests.isEmpty { wake() }
        return first..<(first + requests.count)
    }

    /// No more requests will be added: the consumer sees the end once the added ones finish.
    public func close() {
        let waiting = state.withLock { s in
            s.accepting = false
            return s.takeConsumerAtEnd()
        }
        waiting?.resume(returning: nil)
        if waiting != nil { wake() }
    }

    // MARK: Producer (the HTTP client)

    /// Claims the requests to start now: up to the free slots, none while the backlog is full.
    public func startable() -> [Int] {
        let (concurrency, backlog) = (self.concurrency, self.backlog)
        return state.withLock { s in
            guard !s.cancelled else { return [] }
            var out: [Int] = []
            while s.head < s.queue.count && s.inFlight < concurrency {
                guard s.ready.count + s.inFlight < backlog else { s.throttled = true; break }
                out.append(s.queue[s.head])
                s.head += 1
                s.inFlight += 1
            }
            if s.head == s.queue.count && s.head > 0 { s.queue.removeAll(keepingCapacity: true); s.head = 0 }
            return out
        }
    }

    /// Hands finished requests to the consumer (one wake-up for all of them).
    public func complete(_ completions: [HTTPCompletion]) {
        guard !completions.isEmpty else { return }
        let handed: (CheckedContinuation<[HTTPCompletion]?, Never>, [HTTPCompletion])? = state.withLock { s in
            s.inFlight -= completions.count
            guard !s.cancelled else { return nil }
            s.ready.append(contentsOf: completions)
            guard let waiting = s.consumer else { return nil }
            s.consumer = nil
            defer { s.ready.removeAll() }
            return (waiting, s.ready)
        }
        if let (waiting, out) = handed { waiting.resume(returning: out) }
    }

    /// Every request has been started (none waits for a slot or a retry, and none will be
    /// added): only those in flight are left.
    public var allStarted: Bool {
        state.withLock { !$0.accepting && $0.head == $0.queue.count && $0.awaitingRetry == 0 }
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// The consumer has read the last completion, or the batch was cancelled: the producer can
    /// forget it. (Until then a completion it has not looked at may still be retried.)
    public var isFinished: Bool { state.withLock { $0.cancelled || $0.drained } }

    // MARK: Consumer

    public func makeAsyncIterator() -> HTTPTransfers { self }

    /// Wakes the consumer with no completions (an empty group), at once or at its next call to
    /// ``next()``: for a consumer that acts on time passing, such as a group commit waiting for
    /// its moment while a slow transfer is the only one left.
    public func nudge() {
        let waiting = state.withLock { s in
            let waiting = s.consumer
            s.consumer = nil
            if waiting == nil { s.nudged = true }
            return waiting
        }
        waiting?.resume(returning: [])
    }

    /// What `next()` does once it holds its continuation.
    private enum Answer {
        case completions([HTTPCompletion], wakeProducer: Bool)
        case end
        case nudged
        case wait(wakeProducer: Bool)
    }

    /// The completions gathered since the last call (waiting for at least one, or a ``nudge()``:
    /// then none), or nil once every request has finished for good or the batch was cancelled.
    public func next() async -> [HTTPCompletion]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<[HTTPCompletion]?, Never>) in
                let answer: Answer = state.withLock { s in
                    if !s.ready.isEmpty {
                        let out = s.ready
                        s.ready.removeAll()
                        s.nudged = false
                        defer { s.throttled = false }
                        return .completions(out, wakeProducer: s.throttled)
                    } else if s.cancelled || s.allDone {
                        s.drained = true
                        return .end
                    } else if s.nudged {
                        s.nudged = false
                        return .nudged
                    } else {
                        s.consumer = c
                        defer { s.throttled = false }
                        return .wait(wakeProducer: s.throttled)
                    }
                }
                switch answer {
                case .completions(let out, let wakeProducer):
                    if wakeProducer { wake() }
                    c.resume(returning: out)
                case .end:
                    wake()
                    c.resume(returning: nil)
                case .nudged:
                    c.resume(returning: [])
                case .wait(let wakeProducer):
                    if wakeProducer { wake() }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Keeps the batch open for request `index`, to be ``resubmit(_:)``ted after a back-off.
    public func retryLater(_ index: Int) {
        state.withLock { $0.awaitingRetry += 1 }
    }

    /// Queues request `index` again (after ``retryLater(_:)``); it starts when a slot is free.
    public func resubmit(_ index: Int) {
        state.withLock { s in
            s.awaitingRetry -= 1
            if !s.cancelled { s.queue.append(index) }
        }
        wake()
    }

    /// Gives up a ``retryLater(_:)`` without running the request again.
    public func abandonRetry(_ index: Int) {
        let waiting = state.withLock { s in
            s.awaitingRetry -= 1
            return s.takeConsumerAtEnd()
        }
        waiting?.resume(returning: nil)
        if waiting != nil { wake() }
    }

    /// Drops queued requests and tells the producer to abort those in flight; the consumer's
    /// next call returns nil.
    public func cancel() {
        let (first, waiting): (Bool, CheckedContinuation<[HTTPCompletion]?, Never>?) = state.withLock { s in
            guard !s.cancelled else { return (false, nil) }
            s.cancelled = true
            s.ready.removeAll()
            defer { s.consumer = nil }
            return (true, s.consumer)
        }
        guard first else { return }
        waiting?.resume(returning: nil)
        wake()
    }
}
