import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// `strata import --git` against a real repository built in the test with `git fast-import`.
@Suite struct GitImportCLITests {
    /// The snapshot committed as version `k`: items 1…(5 + k % 4), prices moving with k.
    static func snapshot(_ k: Int) -> String {
        let items = (1...(5 + k % 4)).map { #"{"id":\#($0),"make":"make \#($0)","price":\#(1000 + $0 * 10 + k)}"# }
        return #"{"results":[\#(items.joined(separator: ","))]}"#
    }

    static let day: Int64 = 86_400
    static let start: Int64 = 1_577_836_800  // 2020-01-01T00:00:00Z

    /// A repository whose `data/cars.json` is committed `count` times, a day apart; commits in
    /// `empty` commit an empty file, in `invalid` broken JSON, and every fifth commit also
    /// touches another file only (not a version).
    static func makeRepository(count: Int, empty: Set<Int>, invalid: Set<Int>) throws -> String {
        let repo = TestScratch.path("git")
        try FileManager.default.createDirectory(atPath: repo, withIntermediateDirectories: true)
        try run(["git", "init", "-q", "-b", "main", repo])
        var stream = ""
        func data(_ text: String) { stream += "data \(text.utf8.count)\n\(text)\n" }
        var mark = 0
        for k in 0..<count {
            let time = start + Int64(k) * day
            let body = empty.contains(k) ? "" : invalid.contains(k) ? "{\"results\": [" : snapshot(k)
            mark += 1
            stream +=
                "commit refs/heads/main\nmark :\(mark)\nauthor Scraper <s@example.com> \(time) +0000\ncommitter Scraper <s@example.com> \(time + 60) +0000\n"
            data("snapshot \(k)")
            if mark > 1 { stream += "from :\(mark - 1)\n" }
            stream += "M 100644 inline data/cars.json\n"
            data(body)
            if k % 5 == 4 {
                mark += 1
                stream +=
                    "commit refs/heads/main\nmark :\(mark)\nauthor Scraper <s@example.com> \(time + 1) +0000\ncommitter Scraper <s@example.com> \(time + 61) +0000\n"
                data("notes \(k)")
                stream += "from :\(mark - 1)\nM 100644 inline NOTES.md\n"
                data("note \(k)\n")
            }
        }
        try run(["git", "-C", repo, "fast-import", "--quiet"], stdin: Data(stream.utf8))
        return repo
    }

    @discardableResult
    static func run(_ args: [String], stdin: Data? = nil) throws -> String {
        let out = Pipe()
        let input = stdin.map { _ in Pipe() }
        let p = try Spawned(
            executable: "/usr/bin/env", arguments: args, environment: ProcessInfo.processInfo.environment, stdin: input, stdout: out, stderr: nil)
        if let stdin, let input {
            input.fileHandleForWriting.write(stdin)
            try input.fileHandleForWriting.close()
        }
        let o = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown) }
        return String(decoding: o, as: UTF8.self)
    }

    func iso(_ k: Int, plusHours h: Int = 12) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(Self.start + Int64(k) * Self.day + Int64(h) * 3600)))
    }

    func prices(_ json: String) throws -> [String: Int] {
        let items = try jsonObject(json) as? [[String: Any]] ?? []
        var out: [String: Int] = [:]
        for i in items { out["\(i["id"] ?? "")"] = (i["document"] as? [String: Any])?["price"] as? Int ?? -1 }
        return out
    }

    /// The summary of `import --git` is the sum of what its snapshots did one by one, and a
    /// source's versions are numbered alike by `show`, `history` and `list --format json` whatever
    /// order its snapshots reached the log in.
    @Test func oneSetOfNumbers() async throws {
        let repo = try await offPool { try Self.makeRepository(count: 8, empty: [], invalid: []) }
        let together = makeStoreDir(), oneByOne = makeStoreDir(), backwards = makeStoreDir()
        for store in [together, oneByOne, backwards] {
            #expect(
                try await strata(["source", "add", "cars", "--url", "http://127.0.0.1:1/cars", "--items", "results", "--title", "make"], store: store).status
                    == 0)
        }
        let all = try await strata(["import", "cars", "--git", repo, "--path", "data/cars.json"], store: together)
        #expect(all.status == 0, "\(all.stderr)")
        var sum = (0, 0, 0)
        for k in 0..<8 {
            let file = try writeTemp(Self.snapshot(k))
            let r = try await strata(["import", "cars", file, "--recorded-at", iso(k)], store: oneByOne)
            let counts = try #require(r.stdout.firstMatch(of: /\+(\d+) added, ~(\d+) changed, -(\d+) removed/), "\(r.stdout)")
            sum = (sum.0 + Int(counts.1)!, sum.1 + Int(counts.2)!, sum.2 + Int(counts.3)!)
        }
        #expect(all.stdout.contains("+\(sum.0) added, ~\(sum.1) changed, -\(sum.2) removed"), "\(all.stdout) against \(sum)")

        // Newest first, then the older ones: backfills, each restating the newest.
        for k in [7, 0, 3, 5, 1] {
            let file = try writeTemp(Self.snapshot(k))
            #expect(try await strata(["import", "cars", file, "--recorded-at", iso(k)], store: backwards).status == 0)
        }
        for id in ["1", "6", "8"] {
            let history = try #require(
                try jsonObject(try await strata(["history", "cars", id, "--format", "json"], store: backwards).stdout) as? [[String: Any]])
            let newest = try #require(history.last?["version"] as? Int)
            #expect(newest == history.count, "history numbers \(id) 1…n in observed order")
            let shown = try #require(
                try jsonObject(try await strata(["show", "cars", id, "--offline", "--format", "json"], store: backwards).stdout) as? [String: Any])
            #expect(shown["version"] as? Int == newest, "show and history agree on \(id)")
            let listed = try #require(try jsonObject(try await strata(["list", "cars", "--format", "json"], store: backwards).stdout) as? [[String: Any]])
            #expect(listed.first { $0["id"] as? String == id }?["version"] as? Int == newest, "list and history agree on \(id)")
        }
    }

    @Test func importsEveryVersionByItsDateReimportsNothingAndSkipsBadOnes() async throws {
        let repo = try await offPool { try Self.makeRepository(count: 30, empty: [7], invalid: [13, 21]) }
        let store = makeStoreDir()
        #expect(try await strata(["source", "add", "cars", "--url", "https://api.example.com/cars", "--items", "results"], store: store).status == 0)
        // Part of the history first (as a killed or earlier import would leave it).
        let mid = try Self.run(["git", "-C", repo, "rev-list", "--max-count=1", "--skip=20", "main"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let part = try await strata(["import", "cars", "--git", repo, "--path", "data/cars.json", "--until", mid], store: store)
        #expect(part.status == 0, "\(part.stderr)")
        let all = try await strata(["import", "cars", "--git", repo, "--path", "data/cars.json"], store: store)
        #expect(all.status == 0, "\(all.stderr)")
        // 30 versions, 3 bad: 27 snapshots in all, none twice.
        let imported = try await strata(["log", "--type", "FetchCompleted", "--limit", "100000", "--format", "ndjson"], store: store)
        #expect(imported.stdout.split(separator: "\n").count == 27)
        #expect(all.stdout.contains("already imported") || all.stdout.contains("snapshots imported"))
        let again = try await strata(["import", "cars", "--git", repo, "--path", "data/cars.json"], store: store)
        #expect(again.stdout.contains("0 snapshots imported") && again.stdout.contains("27 already imported"), "\(again.stdout)")
        #expect(again.stdout.contains("3 skipped"))
        let failures = try await strata(["log", "--type", "FetchFailed", "--limit", "100000", "--format", "ndjson"], store: store)
        #expect(failures.stdout.split(separator: "\n").count >= 3)
        // Each good version is what a date read between it and the next commit sees.
        for k in [0, 6, 7, 12, 14, 29] {
            let r = try await strata(["list", "cars", "--as-of", iso(k), "--format", "json"], store: store)
            #expect(r.status == 0, "\(r.stderr)")
            let good = [7, 13, 21].contains(k) ? k - 1 : k
            let expected = Dictionary(uniqueKeysWithValues: (1...(5 + good % 4)).map { ("\($0)", 1000 + $0 * 10 + good) })
            #expect(try prices(r.stdout) == expected, "version \(k)")
        }
        // Before the first commit there was nothing.
        let before = try await strata(["list", "cars", "--as-of", "2019-12-31T00:00:00Z", "--format", "json"], store: store)
        #expect(try prices(before.stdout).isEmpty)
        let history = try await strata(["history", "cars", "1"], store: store)
        #expect(history.stdout.contains("(backfilled)") && history.stdout.contains("2020-01-01"))
        // Committer dates are a minute later.
        let verify = try await strata(["verify"], store: store)
        #expect(verify.status == 0)
    }

    @Test func aKilledImportResumesWithoutDuplicates() async throws {
        let count = 2000
        let repo = try await offPool { try Self.makeRepository(count: count, empty: [], invalid: []) }
        let store = makeStoreDir()
        #expect(try await strata(["source", "add", "cars", "--url", "https://api.example.com/cars", "--items", "results"], store: store).status == 0)
        let (p, _, _) = try startStrata(["import", "cars", "--git", repo, "--path", "data/cars.json"], store: store)
        // Killed once its first batch is in the log (usually well before the end).
        var seen = 0
        for _ in 0..<400 where seen == 0 {
            let r = try await strata(["log", "--type", "FetchCompleted", "--limit", "100000", "--format", "ndjson"], store: store)
            seen = r.stdout.split(separator: "\n").count
            if seen == 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        kill(p.processIdentifier, SIGKILL)
        try await waitForExit(p)
        let atKill = try await strata(["log", "--type", "FetchCompleted", "--limit", "100000", "--format", "ndjson"], store: store)
        let kept = atKill.stdout.split(separator: "\n").count
        #expect(kept > 0 && kept % 8 == 0 || kept == count, "whole batches survive a kill: \(kept)")
        let resumed = try await strata(["import", "cars", "--git", repo, "--path", "data/cars.json"], store: store)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("\(count - kept) snapshot") && (kept == 0 || resumed.stdout.contains("\(kept) already imported")), "\(resumed.stdout)")
        let completed = try await strata(["log", "--type", "FetchCompleted", "--limit", "100000", "--format", "ndjson"], store: store)
        // Every version once.
        #expect(completed.stdout.split(separator: "\n").count == count)
        let now = try await strata(["list", "cars", "--format", "json"], store: store)
        let last = count - 1
        let expected = Dictionary(uniqueKeysWithValues: (1...(5 + last % 4)).map { ("\($0)", 1000 + $0 * 10 + last) })
        #expect(try prices(now.stdout) == expected)
        #expect(try await strata(["verify"], store: store).status == 0)
    }
}
