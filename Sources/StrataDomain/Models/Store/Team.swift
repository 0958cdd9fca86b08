/// A team log this store shares its history through, as the store remembers it.
public struct TeamRemote: Sendable, Hashable {
    public var name: String
    /// Its address with any password left out.
    public var redactedURL: String
    /// The log's seq this store pulled up to.
    public var pulled: UInt64
    public init(name: String, redactedURL: String, pulled: UInt64) { self.name = name; self.redactedURL = redactedURL; self.pulled = pulled }
}

/// This node and its remotes.
public struct TeamRemotes: Sendable, Hashable {
    public var node: String
    public var remotes: [TeamRemote]
    public init(node: String, remotes: [TeamRemote]) { self.node = node; self.remotes = remotes }
}

/// What a push sent.
public struct TeamPush: Sendable, Hashable {
    public var remote: String
    public var appended: Int
    public var alreadyThere: Int
    public var bodiesUploaded: Int
    public var bodyBytesUploaded: Int
    public var headSeq: UInt64
    public var duration: Duration
    public init(remote: String, appended: Int, alreadyThere: Int, bodiesUploaded: Int, bodyBytesUploaded: Int, headSeq: UInt64, duration: Duration) {
        self.remote = remote; self.appended = appended; self.alreadyThere = alreadyThere; self.bodiesUploaded = bodiesUploaded
        self.bodyBytesUploaded = bodyBytesUploaded; self.headSeq = headSeq; self.duration = duration
    }
}

/// What a pull brought, and whether the store was put in the log's order after it.
public struct TeamPull: Sendable, Hashable {
    public var remote: String
    public var appended: Int
    public var alreadyHere: Int
    public var bodiesDownloaded: Int
    public var bodyBytesDownloaded: Int
    /// The log's seq pulled up to.
    public var position: UInt64
    public var ordering: TeamOrdering
    public init(
        remote: String, appended: Int, alreadyHere: Int, bodiesDownloaded: Int, bodyBytesDownloaded: Int, position: UInt64, ordering: TeamOrdering
    ) {
        self.remote = remote; self.appended = appended; self.alreadyHere = alreadyHere; self.bodiesDownloaded = bodiesDownloaded
        self.bodyBytesDownloaded = bodyBytesDownloaded; self.position = position; self.ordering = ordering
    }
}

/// After a pull: whether the store's seqs are the log's up to the pulled position.
public enum TeamOrdering: Sendable, Hashable {
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
public enum TeamFollowEvent: Sendable, Hashable {
    case pulled(remote: String, appended: Int, bodiesDownloaded: Int, position: UInt64)
    case ordering(remote: String, TeamOrdering)
}

/// A source's lease in the team log.
public struct TeamLease: Sendable, Hashable {
    public var source: String
    public var node: String
    public var token: UInt64
    /// Seconds until it expires (negative: expired).
    public var secondsLeft: Double
    public init(source: String, node: String, token: UInt64, secondsLeft: Double) {
        self.source = source; self.node = node; self.token = token; self.secondsLeft = secondsLeft
    }
}

/// A lease this node was given.
public struct TeamLeaseGrant: Sendable, Hashable {
    public var remote: String
    public var token: UInt64
    /// The node it was taken from; nil when it was free or this node's.
    public var takenFrom: String?
    /// Taken before the other node's lease expired.
    public var forced: Bool
    public init(remote: String, token: UInt64, takenFrom: String?, forced: Bool) {
        self.remote = remote; self.token = token; self.takenFrom = takenFrom; self.forced = forced
    }
}

/// Where this store stands against a team log.
public struct TeamStatus: Sendable, Hashable {
    public var remote: String
    public var node: String
    public var logHead: UInt64
    public var pulled: UInt64
    /// Up to where the store's seqs are the log's; nil until the next pull finds out.
    public var inOrder: UInt64?
    public var localEvents: UInt64
    /// This store's events the log lacks, by source.
    public var ahead: [String: Int]
    public var behind: Int
    public var leases: [TeamLease]
    /// The token this node holds for each source it leased.
    public var heldTokens: [String: UInt64]
    /// With a chain check: the problems found (empty when it holds).
    public var chainProblems: [String]?
    public init(
        remote: String, node: String, logHead: UInt64, pulled: UInt64, inOrder: UInt64?, localEvents: UInt64, ahead: [String: Int], behind: Int,
        leases: [TeamLease], heldTokens: [String: UInt64], chainProblems: [String]?
    ) {
        self.remote = remote; self.node = node; self.logHead = logHead; self.pulled = pulled; self.inOrder = inOrder; self.localEvents = localEvents
        self.ahead = ahead; self.behind = behind; self.leases = leases; self.heldTokens = heldTokens; self.chainProblems = chainProblems
    }
}
