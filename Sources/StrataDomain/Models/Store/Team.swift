/// A team log this store shares its history through, as the store remembers it.
package struct TeamRemote: Sendable, Hashable {
    package var name: String
    /// Its address with any password left out.
    package var redactedURL: String
    /// The log's seq this store pulled up to.
    package var pulled: UInt64
    package init(name: String, redactedURL: String, pulled: UInt64) { self.name = name; self.redactedURL = redactedURL; self.pulled = pulled }
}

/// This node and its remotes.
package struct TeamRemotes: Sendable, Hashable {
    package var node: String
    package var remotes: [TeamRemote]
    package init(node: String, remotes: [TeamRemote]) { self.node = node; self.remotes = remotes }
}

/// What a push sent.
package struct TeamPush: Sendable, Hashable {
    package var remote: String
    package var appended: Int
    package var alreadyThere: Int
    package var bodiesUploaded: Int
    package var bodyBytesUploaded: Int
    package var headSeq: UInt64
    package var duration: Duration
    /// The log's bodies replaced by their erased forms (an erasure event pushed).
    package var bodiesErased = 0
    package init(remote: String, appended: Int, alreadyThere: Int, bodiesUploaded: Int, bodyBytesUploaded: Int, headSeq: UInt64, duration: Duration) {
        self.remote = remote; self.appended = appended; self.alreadyThere = alreadyThere; self.bodiesUploaded = bodiesUploaded
        self.bodyBytesUploaded = bodyBytesUploaded; self.headSeq = headSeq; self.duration = duration
    }
}

/// What a pull brought, and whether the store was put in the log's order after it.
package struct TeamPull: Sendable, Hashable {
    package var remote: String
    package var appended: Int
    package var alreadyHere: Int
    package var bodiesDownloaded: Int
    package var bodyBytesDownloaded: Int
    /// The log's seq pulled up to.
    package var position: UInt64
    package var ordering: TeamOrdering
    package init(
        remote: String, appended: Int, alreadyHere: Int, bodiesDownloaded: Int, bodyBytesDownloaded: Int, position: UInt64, ordering: TeamOrdering
    ) {
        self.remote = remote; self.appended = appended; self.alreadyHere = alreadyHere; self.bodiesDownloaded = bodiesDownloaded
        self.bodyBytesDownloaded = bodyBytesDownloaded; self.position = position; self.ordering = ordering
    }
}

/// After a pull: whether the store's seqs are the log's up to the pulled position.
package enum TeamOrdering: Sendable, Hashable {
    /// They were already.
    case inOrder
    /// The store was rewritten in the log's order after seq `after`: `fromLog` events of the
    /// log, then `own` of its own not pushed yet, which now follow `position`.
    case reordered(after: UInt64, fromLog: Int, own: Int, position: UInt64)
    /// Another process has the store open: its events after seq `after` keep this store's order
    /// for now.
    case deferred(after: UInt64)
}

/// What `follow` reports as it goes.
package enum TeamFollowEvent: Sendable, Hashable {
    case pulled(remote: String, appended: Int, bodiesDownloaded: Int, position: UInt64)
    case ordering(remote: String, TeamOrdering)
}

/// A source's lease in the team log.
package struct TeamLease: Sendable, Hashable {
    package var source: String
    package var node: String
    package var token: UInt64
    /// Seconds until it expires (negative: expired).
    package var secondsLeft: Double
    package init(source: String, node: String, token: UInt64, secondsLeft: Double) {
        self.source = source; self.node = node; self.token = token; self.secondsLeft = secondsLeft
    }
}

/// A lease this node was given.
package struct TeamLeaseGrant: Sendable, Hashable {
    package var remote: String
    package var token: UInt64
    /// The node it was taken from; nil when it was free or this node's.
    package var takenFrom: String?
    /// Taken before the other node's lease expired.
    package var forced: Bool
    package init(remote: String, token: UInt64, takenFrom: String?, forced: Bool) {
        self.remote = remote; self.token = token; self.takenFrom = takenFrom; self.forced = forced
    }
}

/// Where this store stands against a team log.
package struct TeamStatus: Sendable, Hashable {
    package var remote: String
    package var node: String
    package var logHead: UInt64
    package var pulled: UInt64
    /// Up to where the store's seqs are the log's; nil until the next pull finds out.
    package var inOrder: UInt64?
    package var localEvents: UInt64
    /// This store's events the log lacks, by source.
    package var ahead: [String: Int]
    package var behind: Int
    package var leases: [TeamLease]
    /// The token this node holds for each source it leased.
    package var heldTokens: [String: UInt64]
    /// With a chain check: the problems found (empty when it holds).
    package var chainProblems: [String]?
    package init(
        remote: String, node: String, logHead: UInt64, pulled: UInt64, inOrder: UInt64?, localEvents: UInt64, ahead: [String: Int], behind: Int,
        leases: [TeamLease], heldTokens: [String: UInt64], chainProblems: [String]?
    ) {
        self.remote = remote; self.node = node; self.logHead = logHead; self.pulled = pulled; self.inOrder = inOrder; self.localEvents = localEvents
        self.ahead = ahead; self.behind = behind; self.leases = leases; self.heldTokens = heldTokens; self.chainProblems = chainProblems
    }
}
