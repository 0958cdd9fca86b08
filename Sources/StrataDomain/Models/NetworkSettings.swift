/// How refreshes and detail downloads talk to the API.
package struct FetchSettings: Sendable {
    /// Detail and image requests in flight at once.
    package var concurrency = 8
    /// Seconds a request may take.
    package var timeout: Double = 30
    /// The largest response body accepted.
    package var maxBytes = 64 << 20
    /// Extra attempts after a retryable failure.
    package var retries = 3
    /// Seconds before the first retry; it doubles after each.
    package var baseBackoff: Double = 0.5
    /// Hears how far a fetch has come (from any task).
    package var progress: (@Sendable (FetchStatus) -> Void)?
    package init() {}
}

/// How far a fetch or an import has come.
package struct FetchStatus: Sendable, Equatable {
    package enum Stage: String, Sendable { case list, details, images }
    package var source: String
    package var stage: Stage
    package var done: Int
    /// Known for details and images; nil while paging.
    package var total: Int?
    package init(source: String, stage: Stage, done: Int, total: Int?) { self.source = source; self.stage = stage; self.done = done; self.total = total }
}

/// How pushes of local writes talk to the API.
package struct PushSettings: Sendable {
    /// Seconds a request may take.
    package var timeout: Double = 30
    /// Extra attempts after a retryable failure.
    package var retries = 2
    /// Seconds before the first retry; it doubles after each.
    package var baseBackoff: Double = 0.2
    package init() {}
}
