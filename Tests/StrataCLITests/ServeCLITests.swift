import FixtureServer
import Foundation
import StrataTestSupport
import Testing

/// `strata serve` through the real binary: a second store fetches the API from it as it was, its
/// JSON read side equals the CLI's JSON for the same query, and clients read consistent
/// snapshots while another process ingests.
@Suite struct ServeCLITests {
    /// `strata serve` on a free port, with the address it printed.
    static func serve(_ store: String, _ args: [String] = []) async throws -> Listening {
        try await Listening.start(["serve", "--port", "0"] + args, store: store)
    }

    static func head(_ store: String) async throws -> Int {
        let log = try await strata(["log", "--format", "json", "--limit", "1"], store: store)
        return try #require((try jsonObject(log.stdout) as? [[String: Any]])?.first?["seq"] as? Int)
    }

    /// Cars defined and fetched in full (details and images) at each of the API's three
    /// versions; the log's head after each pass.
    static func carsFetchedThrice(_ fixture: FixtureServer, store: String) async throws -> [Int] {
        try await addCars(fixture.baseURL, store: store)
        var passes: [Int] = []
        for v in 1...3 {
            fixture.version = v
            let f = try await strata(["fetch", "cars", "--details", "--images"], store: store)
            #expect(f.status == 0, "\(f.stderr)")
            passes.append(try await head(store))
        }
        return passes
    }

    static func addCars(_ base: String, store: String) async throws {
        let r = try await strata(
            [
                "source", "add", "cars", "--url", base + "/cars/offers", "--items", "results", "--title", "model", "--image", "image",
                "--page-param", "page", "--page-size", "10", "--index", "make", "--detail-url", base + "/cars/offers/{id}"
            ], store: store)
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func json(_ r: RunResult) throws -> NSObject { try #require(try jsonObject(r.stdout) as? NSObject, "\(r.stderr)") }
    static func json(_ r: RawResponse) throws -> NSObject { try #require(try jsonObject(r.text) as? NSObject, "\(r.status) \(r.text)") }

    /// What an item is, whatever store it sits in: the list entry, detail, title, fields and the
    /// stored image's hash and size (not seqs, versions or the image's host).
    static func essence(_ item: [String: Any]) -> NSDictionary {
        let image = item["image"] as? [String: Any]
        return [
            "id": item["id"] ?? "", "document": item["document"] ?? NSNull(), "detail": item["detail"] ?? NSNull(), "title": item["title"] ?? "",
            "fields": item["fields"] ?? NSNull(), "removed": item["removed"] ?? false,
            "image": [image?["sha256"] ?? NSNull(), image?["size"] ?? NSNull(), image?["contentType"] ?? NSNull()]
        ]
    }

    @Test func aClientPointedAtTheServerGetsTheAPIAsItWasAndTheReadSideIsTheCLIs() async throws {
        try await withFixtureServer { fixture in
            let a = makeStoreDir()
            let passes = try await Self.carsFetchedThrice(fixture, store: a)
            let middle = String(passes[1])
            let served = try await Self.serve(a, ["--as-of", middle])
            // Store B mirrors the server as if it were the API.
            let b = makeStoreDir()
            try await Self.addCars(served.base, store: b)
            let fetched = try await strata(["fetch", "cars", "--details", "--images"], store: b)
            #expect(fetched.status == 0 && fetched.stdout.contains("25 images"), "\(fetched.stdout) \(fetched.stderr)")
            let listA = try #require(
                try jsonObject(try await strata(["list", "cars", "--as-of", middle, "--format", "json"], store: a).stdout) as? [[String: Any]])
            let listB = try #require(try jsonObject(try await strata(["list", "cars", "--format", "json"], store: b).stdout) as? [[String: Any]])
            #expect(listA.count == 25 && listA.map(\.["id"].debugDescription) == listB.map(\.["id"].debugDescription))
            for id in listA.compactMap({ $0["id"] as? String }) {
                let showA = try #require(
                    try jsonObject(try await strata(["show", "cars", id, "--as-of", middle, "--offline", "--format", "json"], store: a).stdout)
                        as? [String: Any])
                let showB = try #require(
                    try jsonObject(try await strata(["show", "cars", id, "--offline", "--format", "json"], store: b).stdout) as? [String: Any])
                #expect(Self.essence(showA) == Self.essence(showB), "item \(id)")
                #expect(showB["detail"] is [String: Any] && showB["image"] is [String: Any], "item \(id) has its detail and image")
            }
            // The read side as JSON is the CLI's JSON for the same query.
            let p0 = String(passes[0]), base = served.base
            let pairs: [(String, [String])] = [
                ("/_strata/sources", ["source", "list", "--format", "json"]),
                ("/_strata/sources/cars/items?where=make=Toyota&as_of=\(p0)", ["list", "cars", "--where", "make=Toyota", "--as-of", p0, "--format", "json"]),
                (
                    "/_strata/sources/cars/items?sort=-price&limit=5&offset=2",
                    ["list", "cars", "--sort", "-price", "--limit", "5", "--offset", "2", "--as-of", middle, "--format", "json"]
                ),
                ("/_strata/sources/cars/items/3?as_of=\(p0)", ["show", "cars", "3", "--as-of", p0, "--offline", "--format", "json"]),
                // The server was started `--as-of middle`: a read without `as_of` answers there.
                ("/_strata/sources/cars/items/3/history", ["history", "cars", "3", "--as-of", middle, "--format", "json"]),
                ("/_strata/sources/cars/diff?from=\(p0)&to=\(middle)", ["diff", "cars", "--from", p0, "--to", middle, "--format", "json"]),
                // The questions: the same expressions, the same shapes.
                (
                    "/_strata/sources/cars/diff?from=\(p0)&to=\(middle)&when=price%20%3C%20old.price",
                    ["diff", "cars", "--from", p0, "--to", middle, "--when", "price < old.price", "--format", "json"]
                ),
                ("/_strata/sources/cars/count?by=make", ["count", "cars", "--by", "make", "--as-of", middle, "--format", "json"]),
                (
                    "/_strata/sources/cars/count?where=price%20%3E%3D%2010000&by=make",
                    ["count", "cars", "--where", "price >= 10000", "--by", "make", "--as-of", middle, "--format", "json"]
                ),
                (
                    "/_strata/sources/cars/changes?when=price%20%3C%20old.price",
                    ["changes", "cars", "--to", middle, "--when", "price < old.price", "--format", "json"]
                ),
                (
                    "/_strata/sources/cars/items?where=make%20in%20(%22Toyota%22%2C%20%22Kia%22)&limit=50",
                    ["list", "cars", "--where", "make in (\"Toyota\", \"Kia\")", "--limit", "50", "--as-of", middle, "--format", "json"]
                )
            ]
            for (path, args) in pairs {
                let http = try await RawHTTP.request(base, path)
                #expect(http.status == 200, "\(path): \(http.text)")
                #expect(try Self.json(http) == (try Self.json(try await strata(args, store: a))), "\(path) differs from strata \(args.joined(separator: " "))")
            }
            let exported = try await strata(["export", "--events", "--format", "ndjson", "--since", "3"], store: a)
            let lines = exported.stdout.split(separator: "\n").prefix(4).map { try? jsonObject(String($0)) as? NSObject }
            let log = try await RawHTTP.request(base, "/_strata/log?since=3&limit=4")
            #expect((try? jsonObject(log.text) as? [NSObject]) == lines.compactMap { $0 }, "the log is the lines of export --events")
            #expect(try await served.stop().status == 0)
        }
    }

    @Test func clientsReadConsistentSnapshotsWhileAnotherProcessIngests() async throws {
        try await withFixtureServer { fixture in
            let store = makeStoreDir()
            try await Self.addCars(fixture.baseURL, store: store)
            #expect(try await strata(["fetch", "cars", "--details"], store: store).status == 0)
            let served = try await Self.serve(store)
            let base = served.base
            // Ingest in another process (two more API versions) while eight clients read.
            let ingest = Task {
                for v in [2, 3] {
                    fixture.version = v
                    _ = try await strata(["fetch", "cars", "--details"], store: store)
                }
            }
            let seen = try await withThrowingTaskGroup(of: [(UInt64, [UInt8], String)].self) { group in
                for c in 0..<8 {
                    group.addTask {
                        var out: [(UInt64, [UInt8], String)] = []
                        for i in 0..<25 {
                            let path = (c + i) % 2 == 0 ? "/cars/offers/3" : "/cars/offers/7"
                            let r = try await RawHTTP.request(base, path)
                            guard r.status == 200, let seq = r.seq else { Issue.record("\(path): \(r.status) \(r.text)"); continue }
                            out.append((seq, r.body, path))
                        }
                        return out
                    }
                }
                var all: [(UInt64, [UInt8], String)] = []
                for try await part in group { all += part }
                return all
            }
            try await ingest.value
            #expect(seen.count == 200)
            // Every answer is the recording its Strata-Seq names, whole: read again afterwards by seq.
            var checked = Set<UInt64>()
            for (seq, body, path) in seen where checked.insert(seq).inserted {
                let again = try await RawHTTP.request(base, "/@\(seq)\(path)")
                #expect(again.seq == seq && again.body == body, "\(path) at \(seq)")
            }
            for (seq, body, _) in seen { #expect(seen.filter { $0.0 == seq }.allSatisfy { $0.1 == body }) }
            #expect(try await served.stop().status == 0)
            #expect(try await strata(["verify"], store: store).status == 0, "serving wrote nothing the log does not account for")
        }
    }

    @Test func usageErrorsAndAQuietDefaultHost() async throws {
        let store = makeStoreDir()
        // A store with one event: `serve` reads a store, it never creates one.
        #expect(try await strata(["record", "--stream", "s", "--type", "T", "--payload", "-"], store: store, stdin: Data("{}".utf8)).status == 0)
        let badPort = try await strata(["serve", "--port", "70000"], store: store)
        #expect(badPort.status == 64 && badPort.stderr.contains("--port"))
        let badPoint = try await strata(["serve", "--as-of", "99", "--port", "0"], store: store)
        #expect(badPoint.status != 0 && badPoint.stderr.contains("after the newest event"), "\(badPoint.stderr)")
        let noSource = try await strata(["serve", "--source", "nope", "--port", "0"], store: store)
        #expect(noSource.status == 3 && noSource.stderr.contains("nope"), "\(noSource.stderr)")
        // Loopback by default: no warning.
        let served = try await Self.serve(store)
        #expect(served.base.hasPrefix("http://127.0.0.1:"))
        let stopped = try await served.stop()
        #expect(stopped.status == 0)
        let err = stopped.stderr
        #expect(!err.contains("Warning"), "\(err)")
    }
}
