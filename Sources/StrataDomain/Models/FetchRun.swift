package import Foundation

/// One pass over a source's list, as the log recorded it.
package struct FetchRun: Sendable, Hashable {
    package enum Outcome: Sendable, Hashable {
        /// The list was stored; `complete` when every page was seen (so removals were applied).
        case completed(complete: Bool)
        /// The list could not be stored; the message says why.
        case failed(String)
    }

    package var id: String
    /// The seq of the event that ended the run (`FetchCompleted` or the final `FetchFailed`).
    package var seq: UInt64
    package var at: Date
    package var outcome: Outcome
    package var pages: Int
    /// Detail or image requests of the run that failed.
    package var failures: Int
    /// Seconds the API said its list stays fresh after this pass (`Cache-Control: max-age`).
    package var freshFor: Double?

    package init(id: String, seq: UInt64, at: Date, outcome: Outcome, pages: Int = 0, failures: Int = 0, freshFor: Double? = nil) {
        self.id = id; self.seq = seq; self.at = at; self.outcome = outcome; self.pages = pages; self.failures = failures; self.freshFor = freshFor
    }

    package var succeeded: Bool { if case .completed = outcome { true } else { false } }
}

/// What a refresh asks of the network besides the list.
package struct RefreshRequest: Sendable, Hashable {
    package enum Details: Sendable, Hashable {
        /// The list only.
        case none
        /// Details of new, changed or reappeared items and of items still without one.
        case changed
        /// Those, and every stored detail revalidated with a conditional request (a 304 stores no
        /// body); `maxAge` (seconds) limits the revalidation to details last seen longer ago.
        case all(maxAge: Double?)
    }

    package var details: Details
    package var images: Bool
    /// At most this many list pages (an incomplete pass removes nothing).
    package var pageLimit: Int?
    /// Take the source's lease in the team log even when another node's has not expired.
    package var takeLease = false

    package init(details: Details = .none, images: Bool = false, pageLimit: Int? = nil, takeLease: Bool = false) {
        self.details = details
        self.images = images
        self.pageLimit = pageLimit
        self.takeLease = takeLease
    }
}

/// The result of refreshing a source: the run plus what it changed.
package struct RefreshResult: Sendable, Hashable {
    package var source: String
    package var run: String
    package var pages: Int
    package var pagesNotModified: Int
    /// Every page was seen, so items missing from the list were removed.
    package var complete: Bool
    package var added: Int
    /// Items changed, reappeared ones included.
    package var changed: Int
    package var reappeared: Int
    package var removed: Int
    package var details: Int
    package var detailsNotModified: Int
    package var images: Int
    package var bytes: Int
    package var failures: [String]
    package var seconds: Double
    /// Requests that failed and were tried again, by why (`429`, `503`, `timeout`, …).
    package var retried: [String: Int] = [:]
    /// Items stored again because their values are redacted anew (a path added, the key
    /// rotated), by why: not changes of the API's data, not in `changed`.
    package var restored: [String: Int] = [:]
    /// The source's lease in the team log the store shares, taken or renewed before the fetch
    /// (nil when it shares none).
    package var lease: SourceLease?
    /// Notifications the pass's changes queued for the source's alerts.
    package var notificationsQueued = 0

    package init(
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
package struct SourceLease: Sendable, Hashable {
    /// The remote (team log) it was taken in.
    package var remote: String
    /// The fencing token; nil when the team log could not be reached (the fetch went on).
    package var token: UInt64?
    /// The node it was taken from, when another node held it.
    package var takenFrom: String?
    /// Taken from a node whose lease had not expired.
    package var forced: Bool
    /// Why the team log could not be reached.
    package var unreachable: String?

    package init(remote: String, token: UInt64?, takenFrom: String? = nil, forced: Bool = false, unreachable: String? = nil) {
        self.remote = remote; self.token = token; self.takenFrom = takenFrom; self.forced = forced; self.unreachable = unreachable
    }
}
