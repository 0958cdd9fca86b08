import ArgumentParser
import Foundation
import StrataApp
import StrataDomain
import StrataPresentation
import StrataJSON

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the hash chain, every body, and every projection against a rebuild.",
        discussion: reflowed(
            """
            Exits 0 when everything holds and 2 with a report when anything does not.
            Quarantined events are reported; with --strict they also fail the check.
            An encrypted store needs its key (--key-file or STRATA_KEY_FILE), except with
            --chain-only, which checks the log's hash chain over the stored (sealed) rows without
            it and without opening the store for writing.

            Examples:
              strata verify
              strata verify --format json
              strata verify --chain-only
            """)
    )

    @OptionGroup var location: StoreLocation
    @Flag(help: "Skip comparing projections with a rebuild (faster).") var skipProjections = false
    @Flag(help: "Fail when any event is quarantined.") var strict = false
    @Flag(help: "Check only the log's hash chain (no key needed; bodies, indexes and projections are not checked).") var chainOnly = false
    @Option(help: "table or json.") var format: OutputFormat = .table

    func run() async throws {
        try await reportingErrors {
            let r: StoreVerification
            if chainOnly {
                r = try location.access.files.verifyChain()
            } else {
                r = try await location.app().useCases.maintenance.verify(checkProjections: !skipProjections)
            }
            let ok = r.ok && !(strict && !r.quarantined.isEmpty)
            if format == .table {
                var lines = ["events: \(r.eventsChecked) (head \(r.headSeq)), bodies: \(r.bodiesChecked)"]
                let checked = chainOnly ? "hash chain" : "hash chain and bodies"
                lines.append(r.problemCount == 0 ? "\(checked): ok" : "\(checked): \(r.problemCount) problem(s)")
                lines += r.problems.prefix(50).map { "  - \($0)" }
                lines += r.rewrites.map(\.summary)
                for p in r.projections {
                    lines.append(
                        "projection \(p.name) @\(p.checkpoint): \(p.matchesRebuild ? "matches a rebuild" : "DIFFERS from a rebuild"), digest \(p.digest.prefix(16))"
                    )
                    lines += p.differences.map { "  - \($0)" }
                }
                if !r.quarantined.isEmpty {
                    lines.append("quarantined events: \(r.quarantined.count)")
                    lines += r.quarantined.prefix(20).map { "  - \($0.projection) seq \($0.seq): \($0.reason)" }
                }
                lines.append(ok ? "verify: ok" : "verify: FAILED — restore the store from a copy, or run `strata rebuild` if only projections differ")
                emit(lines.joined(separator: "\n"))
            } else {
                emit(
                    r.json(ok: ok).prettyString)
            }
            if !ok { throw ExitCodes.verificationFailed }
        }
    }
}

struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Rebuild projections from the log (all, or the named ones).",
        discussion: reflowed(
            """
            Rebuilds commit in chunks: an interrupted rebuild resumes at the next strata command.

            Examples:
              strata rebuild
              strata rebuild documents
            """)
    )

    @OptionGroup var location: StoreLocation
    @Argument(help: "Projection names; all when omitted.") var projections: [String] = []

    func run() async throws {
        try await reportingErrors {
            let maintenance = try await location.app().useCases.maintenance
            let progress = Progress(label: "rebuilding")
            let clock = ContinuousClock()
            let start = clock.now
            let (names, head) = try await maintenance.rebuild(projections) { progress.update($0) }
            progress.finish()
            emit("rebuilt \(names.joined(separator: ", ")) through seq \(head) in \(durationText(clock.now - start))")
        }
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Events, bytes, bodies, deduplication, projections and map size.",
        discussion:
            "A short summary; --details adds every projection and its tables.\n\nExamples:\n  strata stats\n  strata stats --details\n  strata stats --format json"
    )

    @OptionGroup var location: StoreLocation
    @Flag(help: "Every projection with its tables (the JSON always has them).") var details = false
    @Option(help: "table or json.") var format: OutputFormat = .table

    func run() async throws {
        try await reportingErrors {
            let s = try await location.app().useCases.maintenance.statistics()
            if format != .table {
                emit(s.json.prettyString)
                return
            }
            var lines = [
                "store        \(s.path)",
                "events       \(s.events) (head seq \(s.headSeq), hash \(s.headHash.prefix(16)))",
                "log          \(byteCount(s.logBytes)) envelopes, \(byteCount(s.indexBytes)) indexes",
                "bodies       \(s.bodies) distinct, \(byteCount(s.bodyRawBytes)) raw, \(byteCount(s.bodyStoredBytes)) stored",
                "payloads     \(s.payloadCount) referenced, \(byteCount(s.payloadBytes)); dedupe \(String(format: "%.2f", s.dedupeRatio))×, compression \(String(format: "%.2f", s.compressionRatio))×",
                "map          \(byteCount(s.usedBytes)) used of \(byteCount(s.mapSize)) (file \(byteCount(s.fileBytes)) on disk)",
                "free         \(byteCount(s.freeBytes)) in pages the store's transactions freed"
                    + (s.freeBytes > s.usedBytes / 10 ? " (`strata compact` gives them back)" : "")
            ]
            for r in s.retention {
                lines.append("retention    \(r.source): \(r.bodies) bodies (\(byteCount(r.bytes))) dropped from before seq \(r.horizon)")
            }
            if details {
                for p in s.projections {
                    lines.append("projection   \(p.name) v\(p.version) at seq \(p.checkpoint) (lag \(p.lag), quarantined \(p.quarantined))")
                    for t in p.tables { lines.append("  \(t.name): \(t.entries) entries, \(byteCount(t.bytes))") }
                }
            } else {
                let behind = s.projections.filter { $0.lag > 0 }, quarantined = s.projections.reduce(0) { $0 + $1.quarantined }
                let bytes = s.projections.reduce(0) { $0 + $1.tables.reduce(0) { $0 + $1.bytes } }
                lines.append(
                    "projections  \(s.projections.count), \(byteCount(bytes)); "
                        + (behind.isEmpty ? "all at the head" : "\(behind.count) behind (\(behind.map(\.name).joined(separator: ", ")))")
                        + (quarantined > 0 ? ", \(quarantined) event(s) quarantined" : "") + " (--details lists them)")
            }
            emit(lines.joined(separator: "\n"))
        }
    }
}

struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite the store's file without the space its transactions freed (as git gc does).",
        discussion: reflowed(
            """
            LMDB reuses the pages its transactions free but never gives them back to the file
            system: a store that was migrated, rebuilt or rekeyed, or that imported a long history,
            keeps a file larger than its data. compact writes a copy of the store without those
            pages beside it (DIR.compact; it needs that much free disk), checks that the copy ends
            at the same event with the same hash, swaps the two directories in one atomic rename
            while holding the store's write lock, and deletes the old one. Bodies and projections
            are copied byte for byte; the events' envelopes are packed against a dictionary trained
            on them (about 40% of their size; same events, ids and hashes; in an encrypted store
            under their seals, and it stays under its key). Run it
            while no other strata process has the store open. A compaction that was stopped before
            its swap starts over; one stopped after it only cleans up.

            Examples:
              strata compact
              strata compact --format json
            """)
    )

    @OptionGroup var location: StoreLocation
    @Option(help: "table or json.") var format: OutputFormat = .table

    func run() async throws {
        try await reportingErrors {
            guard case .done(let c) = try await location.access.files.compact() else {
                emit("the last compaction had swapped the stores; removed the old one")
                return
            }
            let (path, head, before, after) = (c.path, c.events, c.bytesBefore, c.bytesAfter)
            if format != .table {
                emit(c.json.prettyString)
            } else {
                for r in c.retention {
                    emit("retention: \(r.source) dropped \(r.bodies) bodies (\(byteCount(r.bytes))) from before seq \(r.horizon) (seq \(r.seq))")
                }
                emit("compacted \(path): \(byteCount(before)) → \(byteCount(after)) (\(head) events)")
            }
        }
    }
}
