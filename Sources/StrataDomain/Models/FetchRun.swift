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

/// What a refresh asks of the network besides the list.
public struct RefreshRequest: Sendable, Hashable {
    public enum Details: Sendable, Hashable {
        /// The list only.
        case none
        /// Details of new, changed or reappeared items and of items still without one.
        case changed
        /// Those, and every stored detail revalidated with a conditional request (a 304 stores no
        /// body); `maxAge` (seconds) limits the revalidation to details last seen longer ago.
        case all(maxAge: Double?)
    }

    public var details: Details
    public var images: Bool
    /// At most this many list pages (an incomplete pass removes nothing).
    public var pageLimit: Int?
    /// Take the source's lease in the team log even when another node's has not expired.
    public var takeLease = false

    public init(details: Details = .none, images: Bool = false, pageLimit: Int? = nil, takeLease: Bool = false) {
        self.details = details
        self.images = images
        self.pageLimit = pageLimit
        self.takeLease = takeLease
    }
}

/// The result of refreshing a source: the run plus what it changed.
public struct RefreshResult: Sendable, Hashable {
    public var source: String
    public var run: String
    public var pages: Int
    public var pagesNotModified: Int
    /// Every page was seen, so items missing from the list were removed.
    public var complete: Bool
    public var added: Int
    /// Items changed, reappeared ones included.
    public var changed: Int
    public var reappeared: Int
    public var removed: Int
    public var details: Int
    public var detailsNotModified: Int
    public var images: Int
    public var bytes: Int
    public var failures: [String]
    public var seconds: Double
    /// Requests that failed and were tried again, by why (`429`, `503`, `timeout`, …).
    public var retried: [String: Int] = [:]
    /// The source's lease in the team log the store shares, taken or renewed before the fetch
    /// (nil when it shares none).
    public var lease: SourceLease?

    public init(
        source: String, run: String, pages: Int = 0, pagesNotModified: Int = 0, complete: Bool = true, added: Int = 0, changed: Int = 0,
        reappeared: Int = 0, removed: Int = 0, details: Int = 0, detailsNotModified: Int = 0, images: Int = 0, bytes: Int = 0,
        failures: [String] = [], seconds: Double = 0
    ) {
        self.source = source; self.run = run; self.pages = pages; self.pagesNotModified = pagesNotModified; self.complete = complete
        self.added = added; self.changed = changed; self.reappeared = reappeared; self.removed = removed; self.details = details
        self.detailsNotModified = detailsNotModified; self.images = images; self.bytes = bytes; self.failures = failures; self.seconds = seconds
    }
}

/// A store's lease on a source in a team log it shares (``SourceLeaseRepository``).
public struct SourceLease: Sendable, Hashable {
    /// The remote (team log) it was taken in.
    public var remote: String
    /// The fencing token; nil when the team log could not be reached (the fetch went on).
    public var token: UInt64?
    /// The node it was taken from, when another node held it.
    public var takenFrom: String?
    /// Taken from a node whose lease had not expired.
    public var forced: Bool
    /// Why the team log could not be reached.
    public var unreachable: String?

    public init(remote: String, token: UInt64?, takenFrom: String? = nil, forced: Bool = false, unreachable: String? = nil) {
        self.remote = remote; self.token = token; self.takenFrom = takenFrom; self.forced = forced; self.unreachable = unreachable
    }
}
