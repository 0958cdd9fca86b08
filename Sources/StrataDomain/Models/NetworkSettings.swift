/// How refreshes and detail downloads talk to the API.
public struct FetchSettings: Sendable {
    /// Detail and image requests in flight at once.
    public var concurrency = 8
    /// Seconds a request may take.
    public var timeout: Double = 30
    /// The largest response body accepted.
    public var maxBytes = 64 << 20
    /// Extra attempts after a retryable failure.
    public var retries = 3
    /// Seconds before the first retry; it doubles after each.
    public var baseBackoff: Double = 0.5
    /// Hears how far a fetch has come (from any task).
    public var progress: (@Sendable (FetchStatus) -> Void)?
    public init() {}
}

/// How far a fetch or an import has come.
public struct FetchStatus: Sendable, Equatable {
    public enum Stage: String, Sendable { case list, details, images }
    public var source: String
    public var stage: Stage
    public var done: Int
    /// Known for details and images; nil while paging.
    public var total: Int?
    public init(source: String, stage: Stage, done: Int, total: Int?) { self.source = source; self.stage = stage; self.done = done; self.total = total }
}

/// How pushes of local writes talk to the API.
public struct PushSettings: Sendable {
    /// Seconds a request may take.
    public var timeout: Double = 30
    /// Extra attempts after a retryable failure.
    public var retries = 2
    /// Seconds before the first retry; it doubles after each.
    public var baseBackoff: Double = 0.2
    public init() {}
}
