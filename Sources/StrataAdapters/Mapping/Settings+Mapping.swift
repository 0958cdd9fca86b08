package import StrataDomain
package import StrataData

extension FetchOptions {
    /// The fetcher's options for `settings`.
    package init(_ settings: FetchSettings) {
        self.init()
        concurrency = settings.concurrency
        timeout = settings.timeout
        maxBytes = settings.maxBytes
        retries = settings.retries
        baseBackoff = settings.baseBackoff
        if let hear = settings.progress {
            progress = { p in hear(FetchStatus(source: p.source, stage: FetchStatus.Stage(rawValue: p.stage.rawValue)!, done: p.done, total: p.total)) }
        }
    }
}

extension PushOptions {
    /// The pusher's options for `settings`; the concurrency is given per push.
    package init(_ settings: PushSettings) {
        self.init()
        timeout = settings.timeout
        retries = settings.retries
        baseBackoff = settings.baseBackoff
    }
}
