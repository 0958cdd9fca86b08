import ArgumentParser
import EventStore
import Foundation
import Logging
import TeamLog

// The team log: store tools, like `rekey`, that move the log's events between this store and a
// PostgreSQL team log (the TeamLog target).

extension RemoteRegistry {
    /// The remote `name`, or the only one when `name` is nil.
    func resolve(_ name: String?) throws -> (name: String, remote: Remote) {
        if let name {
            guard let r = remotes[name] else {
                throw CLIError("no remote named \(name); add one with `strata remote add \(name) postgres://USER@HOST/DB`", exit: ExitCodes.notFound)
            }
            return (name, r)
        }
        guard remotes.count == 1, let only = remotes.first else {
            throw CLIError(
                remotes.isEmpty
                    ? "no remote yet; add one with `strata remote add NAME postgres://USER@HOST/DB`"
                    : "name the remote: \(remotes.keys.sorted().joined(separator: ", "))", exit: ExitCode.validationFailure)
        }
        return (only.key, only.value)
    }
}

struct RemoteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Share the log with a team through PostgreSQL: add a remote, push, pull, sync, status.",
        discussion: reflowed(
            """
            A remote is a PostgreSQL database holding one shared log: a gapless global sequence in
            commit order, hash-chained, with each body stored once (docs/architecture.md, The team
            log). `push` sends this store's own events the log lacks; `pull` appends the log's events
            this store lacks, in the log's order; `sync` does both. The password comes from
            $PGPASSWORD, ~/.pgpass or a $VAR template in the URL, and is never stored or printed.

            Examples:
              strata remote add team 'postgres://strata@db.example/strata'
              strata remote push
              strata remote pull
              strata remote status
              strata remote lease books        # only this node pushes new events of books

            Several nodes fetching the same source take turns with a lease: `remote lease SOURCE`
            gives this node a fencing token; a push of that source's new events by any other node,
            or by this one under an older token (paused past its lease, then taken over), is refused
            with exit code 5 and appends nothing. `--force` takes a lease that has not expired.
            """),
        subcommands: [Add.self, List.self, Remove.self, Status.self, Push.self, Pull.self, Sync.self, Lease.self, Release.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a team log: postgres://USER[:$VAR]@HOST[:PORT]/DB, or postgres://USER@/DB?host=/SOCKET/DIR.")
        @OptionGroup var location: StoreLocation
        @Argument(help: "A name for it.") var name: String
        @Argument(help: "Its postgres:// URL.") var url: String

        func run() async throws {
            try await reportingErrors {
                let parsed: TeamLogLocation
                do { parsed = try TeamLogLocation(url: url) } catch { throw CLIError("\(error)", exit: ExitCode.validationFailure) }
                _ = try await location.open()  // the store exists, under its key if it has one
                var registry = try RemoteRegistry.load(store: location.path)
                if registry.remotes[name] != nil { throw CLIError("a remote named \(name) exists; remove it first with `strata remote remove \(name)`") }
                registry.remotes[name] = .init(url: parsed.url)
                try registry.save(store: location.path)
                emit("added remote \(name) (\(TeamLogLocation.redact(url))); `strata remote push \(name)` sends this store's events")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "The remotes, with how far each was pulled.")
        @OptionGroup var location: StoreLocation

        func run() async throws {
            try await reportingErrors {
                let registry = try RemoteRegistry.load(store: location.path)
                if registry.remotes.isEmpty { emit("no remotes (node \(registry.node))"); return }
                emit(
                    registry.remotes.keys.sorted().map {
                        "\($0)  \(TeamLogLocation.redact(registry.remotes[$0]!.url))  pulled to \(registry.remotes[$0]!.pulled)"
                    }
                    .joined(separator: "\n"))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Forget a remote (its database is left as it is).")
        @OptionGroup var location: StoreLocation
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                var registry = try RemoteRegistry.load(store: location.path)
                _ = try registry.resolve(name)
                registry.remotes[name] = nil
                try registry.save(store: location.path)
                emit("removed remote \(name)")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "What is ahead of, and behind, the team log; with --verify, its whole chain checked.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String?
        @Flag(help: "Check the team log's whole hash chain and that its seqs are gapless.") var verify = false

        func run() async throws {
            try await reportingErrors {
                let store = try await location.open()
                let registry = try RemoteRegistry.load(store: location.path)
                let (name, remote) = try registry.resolve(self.name)
                try await withTeamLog(remote, location) { log in
                    let head = try await log.head()
                    let local = try await store.head().seq
                    let ahead = try await log.unpushed(from: store, node: registry.node)
                    let behind = try await log.unpulled(into: store, after: remote.pulled)
                    let leases = try await log.leases()
                    let held = remote.leases ?? [:]
                    // Unpushed events of a source leased elsewhere: a push would be refused.
                    let conflicts = leases.filter { l in (ahead[l.stream] ?? 0) > 0 && (l.node != registry.node || held[l.stream] != l.token) }
                    let conflicting = conflicts.reduce(0) { $0 + ahead[$1.stream]! }
                    var lines = [
                        "\(name): the team log is at seq \(head.seq); this store (node \(TeamLogNode.short(registry.node))) pulled to \(remote.pulled) (its seqs are the log's up to \(remote.inOrder.map { "\($0)" } ?? "the next pull")), holds \(local) events",
                        "ahead: \(ahead.values.reduce(0, +)) event(s) to push · behind: \(behind) event(s) to pull · in conflict: \(conflicting) event(s)"
                    ]
                    for c in conflicts {
                        lines.append(
                            "  conflict: \(ahead[c.stream]!) event(s) of \(c.stream) are leased to \(c.node == registry.node ? "this node under a newer token" : "node \(TeamLogNode.short(c.node))") (token \(c.token)); `strata remote lease \(c.stream) --force` to push them"
                        )
                    }
                    for l in leases {
                        let who =
                            l.node == registry.node
                            ? (held[l.stream] == l.token ? "this node" : "this node under a newer token") : "node \(TeamLogNode.short(l.node))"
                        let when = l.secondsLeft > 0 ? String(format: "%.0f s left", l.secondsLeft) : "expired"
                        lines.append("  lease: \(l.stream) held by \(who), token \(l.token), \(when)")
                    }
                    if verify {
                        let problems = try await log.verify()
                        lines.append(problems.isEmpty ? "team log chain: ok (\(head.seq) events, gapless)" : "team log chain: \(problems.count) problem(s)")
                        lines += problems.prefix(20).map { "  - \($0)" }
                        emit(lines.joined(separator: "\n"))
                        if !problems.isEmpty { throw ExitCodes.verificationFailed }
                        return
                    }
                    emit(lines.joined(separator: "\n"))
                }
            }
        }
    }

    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "push", abstract: "Send this store's own events the team log lacks.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String?
        @Option(help: "Events per transaction (1 to 100000).") var batch = 1_000

        func validate() throws {
            guard (1...100_000).contains(batch) else { throw ValidationError("--batch must be 1 to 100000") }
        }

        func run() async throws {
            try await reportingErrors {
                try await RemoteCommand.withRemote(location, name) { store, registry, name, log in
                    try await RemoteCommand.push(store, log, registry, name, batch: batch)
                }
            }
        }
    }

    struct Pull: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pull", abstract: "Append the team log's events this store lacks, in the log's order.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String?
        @Flag(help: "Keep pulling: whenever a push commits (LISTEN/NOTIFY) and every --poll seconds, until SIGINT or SIGTERM.") var follow = false
        @Option(help: "With --follow: seconds between polls besides the notifications (1 to 3600).") var poll: Double = 30

        func validate() throws {
            guard (1...3_600).contains(poll) else { throw ValidationError("--poll must be 1 to 3600 seconds") }
        }

        func run() async throws {
            try await reportingErrors {
                try await RemoteCommand.withRemote(location, name) { store, registry, name, log in
                    guard follow else { return try await RemoteCommand.pull(store, log, &registry, name, location.path) }
                    try await log.migrate()
                    let path = location.path
                    let start = registry.remotes[name]!.pulled
                    // SIGINT/SIGTERM end the follow between pulls; the position is saved after each.
                    let following = Task { [registry] in
                        var registry = registry
                        var store = store
                        // A pull that finds the store out of the log's order ends the follow for a
                        // moment: the store is put in order, opened again, and followed on.
                        // Another process having the store open defers it (checked again every few
                        // seconds, said once).
                        var warned = false
                        while true {
                            do {
                                try await log.follow(into: store, after: registry.remotes[name]!.pulled, poll: .milliseconds(Int(poll * 1000))) { r in
                                    registry.remotes[name]!.pulled = r.position
                                    try registry.save(store: path)
                                    if r.appended > 0 {
                                        emit("\(name): pulled \(r.appended) event(s), \(r.bodiesDownloaded) bodies; at seq \(r.position) of the log")
                                    }
                                    guard try await RemoteCommand.alignment(store, log, &registry, name, path) == r.position else { throw OutOfOrder() }
                                }
                                return
                            } catch is OutOfOrder {
                                switch try await RemoteCommand.keepInLogOrder(store, log, &registry, name, path, quiet: warned) {
                                case .inOrder: break
                                case .reordered(let line):
                                    emit("\(name): \(line)")
                                    store = try await location.open()
                                    warned = false
                                case .notNow:
                                    warned = true
                                    try await Task.sleep(for: .seconds(min(poll, 3)))
                                }
                            }
                        }
                    }
                    let stop = StopSignals { following.cancel() }
                    defer { stop.cancel() }
                    do { try await following.value } catch is CancellationError {}
                    return "\(name): stopped following at seq \(try RemoteRegistry.load(store: path).remotes[name]?.pulled ?? start) of the log"
                }
            }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sync", abstract: "Push, then pull.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String?

        func run() async throws {
            try await reportingErrors {
                try await RemoteCommand.withRemote(location, name) { store, registry, name, log in
                    let pushed = try await RemoteCommand.push(store, log, registry, name)
                    return pushed + "\n" + (try await RemoteCommand.pull(store, log, &registry, name, location.path))
                }
            }
        }
    }

    struct Lease: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lease",
            abstract: "Take or renew the lease on a source: only this node pushes its new events until the lease expires and another node takes it.")
        @OptionGroup var location: StoreLocation
        @Argument(help: "The source (stream) to lease.") var source: String
        @Argument var name: String?
        @Option(help: "Seconds until the lease expires (1 to 86400).") var ttl: Double = 300
        @Flag(help: "Take the lease even though another node's has not expired (that node's later pushes of it are refused).") var force = false

        func validate() throws {
            guard (1...86_400).contains(ttl) else { throw ValidationError("--ttl must be 1 to 86400 seconds") }
        }

        func run() async throws {
            try await reportingErrors {
                try await RemoteCommand.withRemote(location, name) { _, registry, name, log in
                    let grant = try await log.acquireLease(stream: source, node: registry.node, ttl: ttl, force: force)
                    registry.remotes[name]!.leases = (registry.remotes[name]!.leases ?? [:]).merging([source: grant.token]) { $1 }
                    try registry.save(store: location.path)
                    if grant.forced, let from = grant.takenFrom {
                        warn(
                            "took the lease on \(source) from node \(TeamLogNode.short(from)) before it expired; that node's pushes of \(source) are refused from now on"
                        )
                    }
                    let from = grant.takenFrom.map { " (from node \(TeamLogNode.short($0)))" } ?? ""
                    return "\(name): this node holds the lease on \(source)\(from), token \(grant.token), for \(Int(ttl)) s"
                }
            }
        }
    }

    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "release", abstract: "End this node's lease on a source now.")
        @OptionGroup var location: StoreLocation
        @Argument(help: "The source (stream).") var source: String
        @Argument var name: String?

        func run() async throws {
            try await reportingErrors {
                try await RemoteCommand.withRemote(location, name) { _, registry, name, log in
                    guard try await log.releaseLease(stream: source, node: registry.node) else {
                        throw CLIError("this node does not hold the lease on \(source)", exit: ExitCodes.notFound)
                    }
                    return "\(name): released the lease on \(source)"
                }
            }
        }
    }

    /// Opens the store, its registry (saved first, so the node id stays the same from the first
    /// push on) and the remote's team log, and prints what `body` returns.
    static func withRemote(
        _ location: StoreLocation, _ name: String?,
        _ body: (EventStore, inout RemoteRegistry, String, PostgresTeamLog) async throws -> String
    ) async throws {
        // A pull stopped after putting the store in the log's order leaves the old copy behind.
        let standard = (location.path as NSString).standardizingPath
        _ = try? EventStore.settleSwap(of: standard, copyPath: standard + ".replica", mark: replicaMark)
        let store = try await location.open()
        var registry = try RemoteRegistry.load(store: location.path)
        try registry.save(store: location.path)
        let (name, remote) = try registry.resolve(name)
        try await withTeamLog(remote, location) { log in emit(try await body(store, &registry, name, log)) }
    }

    static func push(_ store: EventStore, _ log: PostgresTeamLog, _ registry: RemoteRegistry, _ name: String, batch: Int = 1_000) async throws -> String {
        let started = ContinuousClock.now
        let r = try await log.push(from: store, node: registry.node, leases: registry.remotes[name]?.leases ?? [:], batch: batch)
        let seconds = Double((ContinuousClock.now - started).components.attoseconds) / 1e18 + Double((ContinuousClock.now - started).components.seconds)
        return
            "\(name): pushed \(r.appended) event(s) (\(r.alreadyThere) already there), \(r.bodiesUploaded) bodies, \(formatBytes(r.bodyBytesUploaded)); the log is at seq \(r.headSeq) (\(String(format: "%.2f", seconds)) s)"
    }

    static func pull(_ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String, _ path: String) async throws -> String {
        let from = registry.remotes[name]!.pulled
        let r = try await log.pull(into: store, after: from)
        registry.remotes[name]!.pulled = r.position
        try registry.save(store: path)
        var lines = [
            "\(name): pulled \(r.appended) event(s) (\(r.alreadyHere) already here), \(r.bodiesDownloaded) bodies, \(formatBytes(r.bodyBytesDownloaded)); at seq \(r.position) of the log"
        ]
        if case .reordered(let line) = try await keepInLogOrder(store, log, &registry, name, path) { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    static let replicaMark = ".strata-replica-swapped"

    /// How far the store's seqs are the log's, up to the pulled position: checked from the seq
    /// known to be in order, and remembered in the registry when it reaches the position.
    static func alignment(
        _ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String,
        _ path: String
    ) async throws -> UInt64 {
        let position = registry.remotes[name]!.pulled
        let known = registry.remotes[name]!.inOrder ?? 0
        guard known != position else { return position }
        let inOrder = try await log.alignment(of: store, from: known, position: position)
        if inOrder == position {
            registry.remotes[name]!.inOrder = position
            try registry.save(store: path)
        }
        return inOrder
    }

    /// Ends a follow's pull to put the store in the log's order.
    struct OutOfOrder: Error {}

    enum Ordering: Equatable {
        /// The store's seqs were the log's up to the pulled position already.
        case inOrder
        /// The store was put in the log's order (the line says what moved); the store object
        /// given is the old one now: open the store again.
        case reordered(String)
        /// Another process has the store open (a warning said so): it keeps its order for now.
        case notNow
    }

    /// After a pull: when the store's own events were overtaken by other nodes' pushes, puts the
    /// store in the log's order up to the pulled position, its unpushed events after it
    /// (``PostgresTeamLog/replica(of:inOrder:position:into:)``), so that its seq N is the log's
    /// seq N.
    static func keepInLogOrder(
        _ store: EventStore, _ log: PostgresTeamLog, _ registry: inout RemoteRegistry, _ name: String,
        _ path: String, quiet: Bool = false
    ) async throws -> Ordering {
        let path = (path as NSString).standardizingPath
        let position = registry.remotes[name]!.pulled
        let inOrder = try await alignment(store, log, &registry, name, path)
        guard inOrder < position else { return .inOrder }
        func notNow() -> Ordering {
            if !quiet {
                warn(
                    "the store is open in another strata process (a browser, a server, a follow), so its events after seq \(inOrder) stay in this store's order and its seqs differ from the log's after it; close that process and pull again"
                )
            }
            return .notNow
        }
        // Checked first, so that a busy store costs no copy (and again at the swap).
        if store.isOpenElsewhere { return notNow() }
        let copyPath = path + ".replica"
        do { try EventStore.settleSwap(of: path, copyPath: copyPath, mark: replicaMark) } catch { throw CLIError(error) }
        var replica = try await log.replica(of: store, inOrder: inOrder, position: position, into: copyPath)
        var next = registry
        next.remotes[name]!.inOrder = position
        for _ in 0..<5 {
            try next.save(store: copyPath)
            let upTo = replica.copiedUpTo
            switch try store.swap(with: replica.store, mark: replicaMark, when: { seq, _ in seq == upTo }) {
            case .swapped:
                registry = next
                try EventStore.settleSwap(of: path, copyPath: copyPath, mark: replicaMark)
                let own = replica.outbox == 0 ? "" : " (seqs \(position + 1)–\(position + UInt64(replica.outbox)))"
                return .reordered(
                    "put this store in the log's order after seq \(inOrder): \(replica.reordered) event(s) of the log, then \(replica.outbox) of its own not pushed yet\(own)"
                )
            case .headMoved:
                try await log.appendOutbox(of: store, to: &replica)
            case .inUse:
                try? FileManager.default.removeItem(atPath: copyPath)
                return notNow()
            }
        }
        try? FileManager.default.removeItem(atPath: copyPath)
        throw CLIError("the store kept changing while it was put in the log's order; stop the other strata processes and pull again")
    }
}

/// Opens the remote's team log for `body`, closing it after.
func withTeamLog<T>(_ remote: RemoteRegistry.Remote, _ location: StoreLocation, _ body: (PostgresTeamLog) async throws -> T) async throws -> T {
    let log: PostgresTeamLog
    // STRATA_TEAM_TIMEOUT: seconds one database step may take (30 by default).
    let seconds = environmentValue("STRATA_TEAM_TIMEOUT").flatMap(Double.init).flatMap { $0 > 0 && $0 <= 86_400 ? $0 : nil } ?? 30
    do {
        log = try PostgresTeamLog(location: TeamLogLocation(url: remote.url), operationTimeout: .milliseconds(Int(seconds * 1000)), logger: location.logger())
    } catch { throw CLIError(error) }
    do {
        let value = try await body(log)
        await log.close()
        return value
    } catch let e as TeamLogError {
        await log.close()
        throw CLIError(e.message, exit: e.code == .fenced ? ExitCodes.fenced : .failure)
    } catch {
        await log.close()
        throw error
    }
}

private func formatBytes(_ n: Int) -> String {
    n < 1024 ? "\(n) B" : n < 1 << 20 ? String(format: "%.1f KiB", Double(n) / 1024) : String(format: "%.1f MiB", Double(n) / 1_048_576)
}

/// Runs `handler` once on SIGINT or SIGTERM (instead of the default exit) until cancelled.
final class StopSignals {
    private let sources: [any DispatchSourceSignal]

    init(_ handler: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            s.setEventHandler(handler: handler)
            s.resume()
            return s
        }
    }

    func cancel() {
        for s in sources { s.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
