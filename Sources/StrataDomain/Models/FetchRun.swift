public import Foundation

/// One pass over a source's list, as the log recorded it.
public struct FetchRun: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        /// The list was stored; `complete` when every page was seen (so removals were applied).
        case completed(complete: Bool)
        /// The list could not be stored; the message says why.
        case failed(String)
    }

    public var id: String
    /// The seq of the event that ended the run (`FetchCompleted` or the final `FetchFailed`).
    public var seq: UInt64
    public var at: Date
    public var outcome: Outcome
    public var pages: Int
    /// Detail or image requests of the run that failed.
    public var failures: Int

    public init(id: String, seq: UInt64, at: Date, outcome: Outcome, pages: Int = 0, failures: Int = 0) {
        self.id = id; self.seq = seq; self.at = at; self.outcome = outcome; self.pages = pages; self.failures = failures
    }

    public var succeeded: Bool { if case .completed = outcome { true } else { false } }
}

/// The result of refreshing a source: the run plus what it changed.
public struct RefreshResult: Sendable, Hashable {
    public var source: String
    public var run: String
    public var pages: Int
    public var added: Int
    public var changed: Int
    public var removed: Int
    public var details: Int
    public var images: Int
    public var failures: [String]
    public var seconds: Double

    public init(source: String, run: String, pages: Int = 0, added: Int = 0, changed: Int = 0, removed: Int = 0, details: Int = 0,
                images: Int = 0, failures: [String] = [], seconds: Double = 0) {
        self.source = source; self.run = run; self.pages = pages; self.added = added; self.changed = changed; self.removed = removed
        self.details = details; self.images = images; self.failures = failures; self.seconds = seconds
    }
}
