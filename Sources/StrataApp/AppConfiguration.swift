package import Logging
package import StrataDomain
package import TerminalImages

/// Everything the composition root needs to know about this run.
package struct AppConfiguration: Sendable {
    package var userAgent: String
    /// Turns TLS verification off (explicit opt-out only).
    package var insecureSkipTLSVerify = false
    /// Fetch settings for refreshes and detail downloads.
    package var fetch = FetchSettings()
    /// Push settings (timeout, retries); the concurrency is given per push.
    package var push = PushSettings()
    /// The run is about to make requests (a fetch, a push): the HTTP client starts loading
    /// libcurl while the app is assembled and the store read, not at the first request.
    package var requestsSoon = false
    /// Draw thumbnails with this colour mode; nil draws none (not a TTY, `NO_COLOR`, dumb terminal).
    package var thumbnails: Thumbnailer.ColorMode?
    package var thumbnailColumns = 8
    package var thumbnailRows = 4
    package var logger: Logger
    /// Seconds a source's lease in a team log lasts when a fetch takes it.
    package var leaseSeconds: Double = Self.defaultLeaseSeconds
    package static let defaultLeaseSeconds: Double = 600
    /// How long the lease step before a fetch waits for a team log before it fetches anyway.
    package var teamTimeout: Duration = Self.defaultTeamTimeout
    package static let defaultTeamTimeout: Duration = .seconds(10)
    /// Told what the lease step before a write (not a fetch, which returns its lease) did: a
    /// front end says when a team log was out of reach and the write went on.
    package var leaseReport: @Sendable (_ source: String, _ lease: SourceLease) -> Void = { _, _ in }

    package init(userAgent: String, logger: Logger = Logger(label: "strata")) {
        self.userAgent = userAgent
        self.logger = logger
    }
}
