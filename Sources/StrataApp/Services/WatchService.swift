package import StrataDomain

/// `strata watch` as an application service: the named sources planned, the passes a crash left
/// unmatched against the alerts matched first, every due source fetched while notifications are
/// delivered beside the fetches (a slow or dead receiver never delays a poll), and with `once`
/// one round of delivery after the fetches. The command wires signals to `control`, observes
/// through `Observer` and prints; nothing here knows a terminal, a flag or a metrics server.
package struct WatchService: Sendable {
    let useCases: UseCases

    package init(useCases: UseCases) { self.useCases = useCases }

    /// What the service tells whoever runs it, as it happens.
    package struct Observer: Sendable {
        /// The sources planned, before the first fetch.
        package var planned: @Sendable ([WatchedSource]) -> Void = { _ in }
        /// Every fetch, as it ends.
        package var fetched: @Sendable (WatchReport) -> Void = { _ in }
        /// Every delivery attempt of a notification.
        package var delivered: @Sendable (DeliverNotifications.Attempt) -> Void = { _ in }
        /// A step that failed without stopping the watch (matching, a delivery round).
        package var warning: @Sendable (_ what: String, _ error: any Error) -> Void = { _, _ in }

        package init() {}
    }

    /// Watches `names` (every scheduled source when empty) until `control` stops it; with `once`,
    /// what is due now, then one round of delivery.
    /// - Throws: ``RepositoryError`` for an unknown source or one without a schedule (before any
    ///   fetch), or when the store cannot be read.
    package func run(
        _ names: [String], once: Bool, concurrency: Int, perHost: Int, control: WatchControl, observer: Observer
    ) async throws {
        var watcher = useCases.watch
        watcher.concurrency = concurrency
        watcher.perHost = perHost
        observer.planned(try await watcher.plan(names))
        do { try await useCases.notify() } catch { observer.warning("could not match changes against the alerts", error) }
        let deliver = useCases.deliver
        let delivering =
            once
            ? nil
            : Task {
                await deliver.run(control: control, report: observer.delivered) { error in observer.warning("delivery round failed", error) }
            }
        defer { delivering?.cancel() }
        try await watcher.watch(names, once: once, control: control, report: observer.fetched)
        if once {
            _ = try await deliver.round(report: observer.delivered)
        } else {
            control.stop()
            await delivering?.value
        }
    }
}

extension StrataApp {
    /// The watch service over this app's use cases.
    package var watchService: WatchService { WatchService(useCases: useCases) }
}
