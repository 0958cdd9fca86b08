public import Logging
public import StrataDomain
public import TerminalImages

/// Everything the composition root needs to know about this run.
public struct AppConfiguration: Sendable {
    public var userAgent: String
    /// Turns TLS verification off (explicit opt-out only).
    public var insecureSkipTLSVerify = false
    /// Fetch settings for refreshes and detail downloads.
    public var fetch = FetchSettings()
    /// Push settings (timeout, retries); the concurrency is given per push.
    public var push = PushSettings()
    /// The run is about to make requests (a fetch, a push): the HTTP client starts loading
    /// libcurl while the app is assembled and the store read, not at the first request.
    public var requestsSoon = false
    /// Draw thumbnails with this colour mode; nil draws none (not a TTY, `NO_COLOR`, dumb terminal).
    public var thumbnails: Thumbnailer.ColorMode?
    public var thumbnailColumns = 8
    public var thumbnailRows = 4
    public var logger: Logger
    /// Seconds a source's lease in a team log lasts when a fetch takes it.
    public var leaseSeconds: Double = 600
    /// How long the lease step before a fetch waits for a team log before it fetches anyway.
    public var teamTimeout: Duration = .seconds(10)

    public init(userAgent: String, logger: Logger = Logger(label: "strata")) {
        self.userAgent = userAgent
        self.logger = logger
    }
}
