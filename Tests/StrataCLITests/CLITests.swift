import Foundation
import Testing

@Suite struct CLITests {
    let v1 = #"{"1":{"make":"Ford","model":"Fiesta","price":1000},"2":{"make":"VW","model":"Golf","price":2000}}"#
    let v2 = #"{"1":{"make":"Ford","model":"Fiesta","price":900},"3":{"make":"Fiat","model":"Uno","price":500}}"#

    func seeded() async throws -> String {
        let store = makeStoreDir()
        let (f1, f2) = (try writeTemp(v1), try writeTemp(v2))
        for (id, file, at) in [("s1", f1, "2026-01-01T00:00:00Z"), ("s2", f2, "2026-02-01T00:00:00Z")] {
            let r = try await strata(
                [
                    "record", "--stream", "cars", "--type", "SnapshotRecorded", "--meta", "collection=cars",
                    "--payload", file, "--id", id, "--recorded-at", at
                ], store: store)
            #expect(r.status == 0, "\(r.stderr)")
        }
        return store
    }

    /// Every command's help, on an 80-column terminal, wraps its prose the way a reader expects:
    /// a line of a paragraph ends only where the next word would not fit (no long line followed
    /// by a stub), and no prose line is wider than the terminal.
    @Test func everyHelpWrapsItsProseToTheTerminal() async throws {
        let store = makeStoreDir()
        let dump = try await strata(["--experimental-dump-help"], store: store)
        let root = try #require(try jsonObject(dump.stdout) as? [String: Any])
        var paths: [[String]] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            paths.append(path)
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                if let name = sub["commandName"] as? String, name != "help" { walk(sub, path + [name]) }
            }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        #expect(paths.count > 50)
        for path in paths {
            let help = try await strata(path + ["--help"], store: store, env: ["COLUMNS": "80"])
            #expect(help.status == 0, "\(path)")
            // The prose: everything before the usage line.
            let lines = help.stdout.components(separatedBy: "USAGE:")[0].split(separator: "\n", omittingEmptySubsequences: false)
            for (a, b) in zip(lines, lines.dropFirst()) where !a.isEmpty && !b.isEmpty && !a.hasPrefix(" ") && !b.hasPrefix(" ") {
                let next = b.split(separator: " ").first.map(\.count) ?? 0
                // ArgumentParser breaks at the last space of the next 80 characters, so a word
                // that would end exactly at column 80 goes to the next line.
                #expect(a.count + 1 + next >= 80, "strata \(path.joined(separator: " ")) --help wraps short: \"\(a)\" before \"\(b)\"")
            }
            for line in lines where !line.hasPrefix(" ") {
                #expect(line.count <= 80, "strata \(path.joined(separator: " ")) --help: \"\(line)\"")
            }
        }
    }

    @Test func logJSONCarriesTheStableEventFields() async throws {
        let store = try await seeded()
        let r = try await strata(["log", "--format", "json"], store: store)
        #expect(r.status == 0)
        let events = try #require(try jsonObject(r.stdout) as? [[String: Any]])
        #expect(events.count == 2)
        #expect(events.map { $0["seq"] as? Int } == [2, 1])  // newest first
        for key in ["seq", "id", "type", "schemaVersion", "recordedAt", "stream", "metadata", "payload", "hash", "previousHash"] {
            #expect(events[0][key] != nil, "missing \(key)")
        }
        #expect(events[1]["recordedAt"] as? String == "2026-01-01T00:00:00.000Z")
        #expect((events[0]["payload"] as? [String: Any])?["size"] as? Int == v2.utf8.count)
        let nd = try await strata(["log", "--format", "ndjson", "--oldest-first", "--type", "SnapshotRecorded"], store: store)
        let lines = nd.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("{") && lines[0].contains("\"seq\":1"))
        let table = try await strata(["log"], store: store)
        #expect(table.stdout.hasPrefix("SEQ  TIME  ") && table.stdout.contains("SnapshotRecorded"))
    }

    @Test func recordingTheSameIdTwiceChangesNothing() async throws {
        let store = try await seeded()
        let again = try await strata(
            [
                "record", "--stream", "cars", "--type", "SnapshotRecorded", "--meta", "collection=cars",
                "--id", "s1", "--payload", "-", "--format", "json"
            ], store: store, stdin: Data(v2.utf8))
        #expect(again.status == 0)
        let o = try #require(try jsonObject(again.stdout) as? [String: Any])
        #expect(o["seq"] as? Int == 1 && o["appended"] as? Bool == false)
    }

    @Test func documentsReadNowAndAsOfASeqOrADate() async throws {
        let store = try await seeded()
        let now = try await strata(["doc", "list", "cars", "--format", "json"], store: store)
        let rows = try #require(try jsonObject(now.stdout) as? [[String: Any]])
        #expect(rows.map { $0["key"] as? String } == ["1", "3"])
        let then = try await strata(["doc", "list", "cars", "--as-of", "2026-01-15", "--format", "json"], store: store)
        let old = try #require(try jsonObject(then.stdout) as? [[String: Any]])
        #expect(old.map { $0["key"] as? String } == ["1", "2"])
        #expect((old[0]["document"] as? [String: Any])?["price"] as? Int == 1000)
        let h = try await strata(["doc", "history", "cars", "1"], store: store)
        #expect(h.stdout.contains("~ /price: 1000 → 900"))
        // Times as `log` prints them.
        #expect(h.stdout.range(of: #"v1  seq \d+  \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z  added"#, options: .regularExpression) != nil, "\(h.stdout)")
        let hj = try await strata(["doc", "history", "cars", "2", "--format", "json"], store: store)
        let versions = try #require(try jsonObject(hj.stdout) as? [[String: Any]])
        #expect(versions.map { $0["kind"] as? String } == ["added", "removed"])
        let show = try await strata(["doc", "show", "cars", "1", "--as-of", "1", "--format", "json"], store: store)
        #expect((try jsonObject(show.stdout) as? [String: Any])?["version"] as? Int == 1)
    }

    @Test func exitCodesAreMeaningful() async throws {
        let store = try await seeded()
        let missing = try await strata(["doc", "show", "cars", "999"], store: store)
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("Error: no document 999 in cars"))
        let usage = try await strata(["log", "--limit", "0"], store: store)
        #expect(usage.status == 64)
        let badMeta = try await strata(["record", "--stream", "s", "--type", "T", "--meta", "novalue"], store: store)
        #expect(badMeta.status == 64 && badMeta.stderr.contains("key=value"))
        let badDate = try await strata(["doc", "list", "cars", "--as-of", "last tuesday"], store: store)
        #expect(badDate.status == 64)
        let badFile = try await strata(["record", "--stream", "s", "--type", "T", "--payload", "/nonexistent/file"], store: store)
        #expect(badFile.status == 1 && badFile.stderr.contains("cannot read the payload file"))
        // A read never creates a store: one that is not there is named, exit 3.
        let notAStore = try await strata(["log"], store: "/proc/strata-cannot-exist")
        #expect(notAStore.status == 3 && notAStore.stderr.hasPrefix("Error: no store at /proc/strata-cannot-exist;"), "\(notAStore.stderr)")
        let cannotCreate = try await strata(
            ["record", "--stream", "s", "--type", "T", "--payload", "-"], store: "/proc/strata-cannot-exist", stdin: Data("{}".utf8))
        #expect(cannotCreate.status == 1 && cannotCreate.stderr.hasPrefix("Error: could not open the store"), "\(cannotCreate.stderr)")
    }

    @Test func statsVerifyAndRebuildReport() async throws {
        let store = try await seeded()
        let s = try await strata(["stats", "--format", "json"], store: store)
        let o = try #require(try jsonObject(s.stdout) as? [String: Any])
        #expect(o["events"] as? Int == 2 && o["blobs"] as? Int == 2)
        let p = try #require((o["projections"] as? [[String: Any]])?.first)
        #expect(p["name"] as? String == "documents" && p["checkpoint"] as? Int == 2)
        let v = try await strata(["verify", "--format", "json"], store: store)
        #expect(v.status == 0)
        #expect((try jsonObject(v.stdout) as? [String: Any])?["ok"] as? Bool == true)
        let r = try await strata(["rebuild"], store: store)
        #expect(r.status == 0 && r.stdout.contains("rebuilt documents, sources, items") && r.stdout.contains("through seq 2"))
        let bad = try await strata(["rebuild", "nope"], store: store)
        #expect(bad.status == 1 && bad.stderr.contains("no projection named 'nope'"))
    }
}
