package import Foundation

/// Keeps watch: fetches each scheduled source when it is due, with its own settings, until told
/// to stop; due sources are fetched side by side, at most `concurrency` at once and at most
/// `perHost` against one host. A fetch is the same ``RefreshSource`` as `strata fetch`'s (the
/// team log's lease taken first), so everything it does is in the log; the watcher keeps no
/// state of its own but the failures in a row, and a restarted watcher plans from the log.
///
/// A source that keeps a window (`keepSeconds`, `keepVersions`) has it applied after a successful fetch
/// when the log shows it was not applied within `retentionInterval` (a day): what `strata
/// compact` applies, without the copy, so a source watched for years stays bounded (the freed
/// pages are reused by the next writes; `compact` gives them back to the file system).
package struct WatchSources: Sendable {
    let sources: any SourceRepository
    let catalog: ManageSources
    let refresh: RefreshSource
    let erasures: (any ErasureRepository)?
    let clock: any WatchClock
    /// Fetches in flight at once, and against one host.
    package var concurrency = 8
    package var perHost = 4
    /// Seconds between two applications of a source's retention.
    package var retentionInterval: Double = 86_400

    package init(
        sources: any SourceRepository, catalog: ManageSources, refresh: RefreshSource, erasures: (any ErasureRepository)? = nil,
        clock: any WatchClock = SystemWatchClock()
    ) {
        self.sources = sources
        self.catalog = catalog
        self.refresh = refresh
        self.erasures = erasures
        self.clock = clock
    }

    /// The scheduled sources among `names` (every scheduled one when empty), each with when it is
    /// due. `failures` carries the failures in a row this watcher saw; a source it has not
    /// fetched yet counts one when its last pass in the log failed. `notBefore` holds a source
    /// back (the API's `Retry-After`).
    /// - Throws: ``RepositoryError`` `notFound` for an unknown name, `invalidQuery` for a named
    ///   source without a schedule, or when no source has one.
    package func plan(_ names: [String], failures: [String: Int] = [:], notBefore: [String: Date] = [:]) async throws -> [WatchedSource] {
        let specs = try await catalog.all()
        for n in names where !specs.contains(where: { $0.name == n }) {
            throw RepositoryError(.notFound, "no source named \(n)", next: .listSources)
        }
        var out: [WatchedSource] = []
        for spec in specs where names.isEmpty || names.contains(spec.name) {
            guard let schedule = spec.schedule else {
                if names.isEmpty { continue }
                throw RepositoryError(.invalidQuery, "source \(spec.name) has no schedule", next: .changeSource(source: spec.name, field: .every))
            }
            let last = try await sources.source(named: spec.name).lastRun
            let failed = last.map { $0.succeeded ? 0 : 1 } ?? 0
            var source = WatchedSource(name: spec.name, schedule: schedule, lastAttempt: last?.at, failures: failures[spec.name] ?? failed)
            if let hold = notBefore[spec.name], hold > source.nextDue { source.nextDue = hold }
            // Never poll a list the API said is still fresh (`Cache-Control: max-age`).
            if let last, last.succeeded, let fresh = last.freshFor {
                source.nextDue = max(source.nextDue, last.at.addingTimeInterval(min(fresh, 86_400)))
            }
            source.host = URL(string: spec.url)?.host ?? ""
            source.retains = spec.keepSeconds != nil || spec.keepVersions != nil
            out.append(source)
        }
        guard !out.isEmpty else {
            throw RepositoryError(.invalidQuery, "no source has a schedule", next: .changeSource(source: nil, field: .every))
        }
        return out.sorted { ($0.nextDue, $0.name) < ($1.nextDue, $1.name) }
    }

    /// Fetches `source` once with its schedule's settings.
    package func fetch(_ source: WatchedSource) async -> WatchReport {
        let started = clock.now()
        let outcome: WatchReport.Outcome
        var failures = source.failures
        var retryAfter: Double?
        do {
            outcome = .fetched(try await refresh(source.name, source.schedule.request))
            failures = 0
        } catch let e as RepositoryError where e.code == .conflict {
            outcome = .leasedElsewhere(e.message)
        } catch {
            outcome = .failed("\(error)")
            failures += 1
            retryAfter = (error as? RepositoryError)?.retryAfter
        }
        var next = WatchedSource.nextDue(name: source.name, schedule: source.schedule, lastAttempt: started, failures: failures)
        // The API's own wait wins over a shorter back-off (at most a day).
        if let retryAfter { next = max(next, started.addingTimeInterval(min(retryAfter, 86_400))) }
        var report = WatchReport(source: source.name, due: source.nextDue, started: started, outcome: outcome, nextDue: next)
        if case .fetched = outcome, source.retains, let erasures {
            do {
                report.retention = try await erasures.applyRetention(source: source.name, unlessAppliedWithin: retentionInterval)
            } catch {
                report.retentionError = "\(error)"
            }
        }
        return report
    }

    /// Watches `names` (every scheduled source when empty): fetches each when due, reports every
    /// fetch, and sleeps until the next is due. With `once`, fetches what is due now and returns.
    /// Returns when `control` is stopped, after the fetch in flight; definitions are read again
    /// before each round and at once on a reload.
    package func watch(
        _ names: [String], once: Bool, control: WatchControl = WatchControl(), report: @Sendable (WatchReport) -> Void
    ) async throws {
        var failures: [String: Int] = [:]
        var notBefore: [String: Date] = [:]
        while !control.isStopped {
            let plan = try await plan(names, failures: failures, notBefore: notBefore)
            let now = clock.now()
            let due = plan.filter { $0.nextDue <= now }
            await fetchAll(due, control: control) { r in
                if case .failed = r.outcome {
                    failures[r.source] = (due.first { $0.name == r.source }?.failures ?? 0) + 1
                } else {
                    failures[r.source] = 0
                }
                // A failure's wait (the back-off, or the API's Retry-After when longer) holds across
                // re-planning; a success is planned from the log again.
                if case .failed = r.outcome { notBefore[r.source] = r.nextDue } else { notBefore[r.source] = nil }
                report(r)
            }
            if control.isStopped { return }
            if once { return }
            if !due.isEmpty { continue }
            try await sleep(until: plan[0].nextDue, control: control)
        }
    }

    /// Fetches `due` side by side within the limits, in their order as far as the limits allow;
    /// none is started once `control` is stopped (those in flight finish). Each report is handed
    /// to `each` as its fetch ends.
    private func fetchAll(_ due: [WatchedSource], control: WatchControl, _ each: (WatchReport) -> Void) async {
        guard due.count > 1, concurrency > 1 else {
            for s in due where !control.isStopped { each(await fetch(s)) }
            return
        }
        await withTaskGroup(of: (String, WatchReport).self) { group in
            var waiting = due
            var inFlight: [String: Int] = [:]
            var running = 0
            while true {
                while !control.isStopped, running < concurrency, let i = waiting.firstIndex(where: { inFlight[$0.host, default: 0] < max(1, perHost) }) {
                    let s = waiting.remove(at: i)
                    inFlight[s.host, default: 0] += 1
                    running += 1
                    group.addTask { (s.host, await fetch(s)) }
                }
                guard let (host, r) = await group.next() else { return }
                inFlight[host, default: 1] -= 1
                running -= 1
                each(r)
            }
        }
    }

    /// Sleeps until `date`, in steps of at most a quarter second so that a stop or a reload is
    /// seen at once.
    private func sleep(until date: Date, control: WatchControl) async throws {
        while !control.isStopped, !control.takeReload() {
            let left = date.timeIntervalSince(clock.now())
            if left <= 0 { return }
            try await clock.sleep(seconds: min(left, 0.25))
        }
    }
}
