import ArgumentParser
import Foundation
import StrataJSON
import StrataApp
import StrataDomain

// The team log: store tools, like `rekey`, that move the log's events between this store and a
// PostgreSQL team log, through ``SyncTeam``.

extension StoreLocation {
    /// The store's team logs, each database step bounded by STRATA_TEAM_TIMEOUT seconds (30 by
    /// default; values outside 0–86400 are ignored).
    var team: SyncTeam {
        let seconds = environmentValue("STRATA_TEAM_TIMEOUT").flatMap(Double.init).flatMap { $0 > 0 && $0 <= 86_400 ? $0 : nil } ?? 30
        return access.team(operationTimeout: .milliseconds(Int(seconds * 1000)))
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
                let added = try await location.team.add(name, url: url)
                emit("added remote \(name) (\(added.redactedURL)); `strata remote push \(name)` sends this store's events")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "The remotes, with how far each was pulled.")
        @OptionGroup var location: StoreLocation

        func run() async throws {
            try await reportingErrors {
                let team = try location.team.remotes()
                if team.remotes.isEmpty { emit("no remotes (node \(team.node))"); return }
                emit(team.remotes.map { "\($0.name)  \($0.redactedURL)  pulled to \($0.pulled)" }.joined(separator: "\n"))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Forget a remote (its database is left as it is).")
        @OptionGroup var location: StoreLocation
        @Argument var name: String

        func run() async throws {
            try await reportingErrors {
                try location.team.remove(name)
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
                let status = try await location.team.status(remote: name, verifyChain: verify)
                let lines = Self.lines(status)
                emit(lines.joined(separator: "\n"))
                if let problems = status.chainProblems, !problems.isEmpty { throw ExitCodes.verificationFailed }
            }
        }

        static func lines(_ s: TeamStatus) -> [String] {
            let (name, node, ahead, held) = (s.remote, s.node, s.ahead, s.heldTokens)
            // Unpushed events of a source leased elsewhere: a push would be refused.
            let conflicts = s.leases.filter { l in (ahead[l.source] ?? 0) > 0 && (l.node != node || held[l.source] != l.token) }
            let conflicting = conflicts.reduce(0) { $0 + ahead[$1.source]! }
            var lines = [
                "\(name): the team log is at seq \(s.logHead); this store (node \(shortNode(node))) pulled to \(s.pulled) (its seqs are the log's up to \(s.inOrder.map { "\($0)" } ?? "the next pull")), holds \(s.localEvents) events",
                "ahead: \(ahead.values.reduce(0, +)) event(s) to push · behind: \(s.behind) event(s) to pull · in conflict: \(conflicting) event(s)"
            ]
            for c in conflicts {
                lines.append(
                    "  conflict: \(ahead[c.source]!) event(s) of \(c.source) are leased to \(c.node == node ? "this node under a newer token" : "node \(shortNode(c.node))") (token \(c.token)); `strata remote lease \(c.source) --force` to push them"
                )
            }
            for l in s.leases {
                let who = l.node == node ? (held[l.source] == l.token ? "this node" : "this node under a newer token") : "node \(shortNode(l.node))"
                if l.secondsLeft == -.infinity {
                    lines.append("  lease: \(l.source) released by \(who), token \(l.token); free for any node")
                    continue
                }
                let when = l.secondsLeft > 0 ? String(format: "%.0f s left", l.secondsLeft) : "expired"
                lines.append("  lease: \(l.source) held by \(who), token \(l.token), \(when)")
            }
            if let problems = s.chainProblems {
                lines.append(problems.isEmpty ? "team log chain: ok (\(s.logHead) events, gapless)" : "team log chain: \(problems.count) problem(s)")
                lines += problems.prefix(20).map { "  - \($0)" }
            }
            return lines
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
                emit(RemoteCommand.line(try await location.team.push(remote: name, batch: batch)))
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
                let team = location.team
                guard follow else { return emit(RemoteCommand.lines(try await team.pull(remote: name)).joined(separator: "\n")) }
                // SIGINT/SIGTERM end the follow between pulls; the position is saved after each.
                let following = Task { [name, poll] in
                    try await team.follow(remote: name, poll: .milliseconds(Int(poll * 1000))) { event in
                        switch event {
                        case .pulled(let remote, let appended, let bodies, let position):
                            emit("\(remote): pulled \(appended) event(s), \(RemoteCommand.bodies(bodies)) this store lacked; at seq \(position) of the log")
                        case .ordering(let remote, let ordering):
                            if let line = RemoteCommand.line(ordering) { emit("\(remote): \(line)") }
                        }
                    }
                }
                let stop = StopSignals { following.cancel() }
                defer { stop.cancel() }
                let (remote, position) = try await following.value
                emit("\(remote): stopped following at seq \(position) of the log")
            }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sync", abstract: "Push, then pull.")
        @OptionGroup var location: StoreLocation
        @Argument var name: String?

        func run() async throws {
            try await reportingErrors {
                let (pushed, pulled) = try await location.team.sync(remote: name)
                emit(([RemoteCommand.line(pushed)] + RemoteCommand.lines(pulled)).joined(separator: "\n"))
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
                let grant = try await location.team.lease(source: source, remote: name, ttl: ttl, force: force)
                if grant.forced, let from = grant.takenFrom {
                    warn("took the lease on \(source) from node \(shortNode(from)) before it expired; that node's pushes of \(source) are refused from now on")
                }
                let from = grant.takenFrom.map { " (from node \(shortNode($0)))" } ?? ""
                emit("\(grant.remote): this node holds the lease on \(source)\(from), token \(grant.token), for \(Int(ttl)) s")
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
                let remote = try await location.team.release(source: source, remote: name)
                emit("\(remote): released the lease on \(source)")
            }
        }
    }

    /// "1 body", "3 bodies".
    static func bodies(_ n: Int) -> String { n == 1 ? "1 body" : "\(n) bodies" }

    static func line(_ r: TeamPush) -> String {
        let seconds = r.duration.inSeconds
        return
            "\(r.remote): pushed \(r.appended) event(s) (\(r.alreadyThere) already there), \(Self.bodies(r.bodiesUploaded)) the log lacked (\(byteCount(r.bodyBytesUploaded)) compressed)"
            + (r.bodiesErased > 0 ? ", \(r.bodiesErased) erased \(r.bodiesErased == 1 ? "body" : "bodies") replaced in the log" : "")
            + "; the log is at seq \(r.headSeq) (\(String(format: "%.2f", seconds)) s)"
    }

    /// A pull's lines; a reordering deferred by another process is said on stderr.
    static func lines(_ r: TeamPull) -> [String] {
        var lines = [
            "\(r.remote): pulled \(r.appended) event(s) (\(r.alreadyHere) already here), \(Self.bodies(r.bodiesDownloaded)) this store lacked (\(byteCount(r.bodyBytesDownloaded)) compressed); at seq \(r.position) of the log"
        ]
        if let line = line(r.ordering) { lines.append(line) }
        return lines
    }

    /// The line a reordering is reported with; nil when there is nothing to say on stdout (a
    /// deferred one is a warning on stderr).
    static func line(_ ordering: TeamOrdering) -> String? {
        switch ordering {
        case .inOrder: return nil
        case .reordered(let after, let fromLog, let own, let position):
            let seqs = own == 0 ? "" : " (seqs \(position + 1)–\(position + UInt64(own)))"
            return "put this store in the log's order after seq \(after): \(fromLog) event(s) of the log, then \(own) of its own not pushed yet\(seqs)"
        case .deferred(let after):
            warn(
                "the store is open in another strata process (a browser, a server, a follow), so its events after seq \(after) stay in this store's order and its seqs differ from the log's after it; close that process and pull again"
            )
            return nil
        }
    }
}

/// A node's id as people read it: its last 12 characters.
func shortNode(_ id: String) -> String { String(id.suffix(12)) }

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
