import ArgumentParser
import FixtureServer
import ChildProcess
import Foundation

/// The end-to-end story on the bundled fixture API: define, fetch, list, show, change the API
/// twice, then history, diff and as-of. The fixture server runs in this process on loopback; each
/// step runs this same binary as a child process, exactly as a user would type it.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Mirror the bundled used-car fixture API through three versions and show what changed.",
        discussion: reflowed(
            """
            Uses a new temporary store unless --store is given; the fixture server listens on an
            ephemeral 127.0.0.1 port for the duration of the demo.

            Example:
              strata demo --fixtures fixtures
            """)
    )
    @Option(help: ArgumentHelp("The store directory (default: a new temporary one, removed afterwards).", valueName: "path"))
    var store: String?
    @Option(help: ArgumentHelp("The fixtures directory.", valueName: "path")) var fixtures = "fixtures"

    func validate() throws {
        guard FileManager.default.fileExists(atPath: fixtures + "/cars") else {
            throw ValidationError("no fixtures at \(fixtures); run from the repository root or pass --fixtures")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let server = FixtureServer(root: fixtures)
            try await server.start()
            let temporary = store == nil
            let path = store ?? FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString)").path
            defer { if temporary { try? FileManager.default.removeItem(atPath: path) } }
            do {
                try await story(server: server, store: path)
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }

    private func story(server: FixtureServer, store: String) async throws {
        let base = server.baseURL
        say("# The fixture API (used-car offers) is at \(base), serving version 1; the store is \(store).")
        try await step(
            store, "source", "add", "cars", "--url", base + "/cars/offers", "--items", "results", "--title", "model",
            "--subtitle", "make", "--subtitle", "price", "--image", "image", "--page-param", "page", "--page-size", "10",
            "--index", "make,model", "--detail-url", base + "/cars/offers/{id}")
        try await step(store, "fetch", "cars", "--details", "--images")
        let first = try await lastFetch(store)
        try await step(store, "list", "cars", "--limit", "8")
        try await step(store, "list", "cars", "--where", "make=Toyota", "--sort=-price")
        try await step(store, "show", "cars", "3")
        server.version = 2
        say("\n# The API now serves version 2: prices drop, cars 9 and 17 are sold, three new offers.")
        try await step(store, "fetch", "cars", "--details", "--images")
        server.version = 3
        say("\n# Version 3: car 9 is back, cheaper; car 3 changes price, rating and seller.")
        try await step(store, "fetch", "cars", "--details", "--images")
        let last = try await lastFetch(store)
        try await step(store, "history", "cars", "3")
        try await step(store, "history", "cars", "9")
        try await step(store, "diff", "cars", "--from", String(first), "--to", String(last))
        try await step(store, "list", "cars", "--as-of", String(first), "--limit", "5")
        try await step(store, "log", "--limit", "8")
        try await notes(server: server, store: store)
        try await step(store, "verify")
        try await past(store: store, first: first)
    }

    /// The past over HTTP: `strata serve` answers as of the first fetch (version 1) while the
    /// store holds all three, and a second store, pointed at it as at the API, fetches one page.
    private func past(store: String, first: UInt64) async throws {
        say("\n# The past over HTTP: the store holds three versions; serve the first (seq \(first)) and point a client at it.")
        say("$ strata serve --port 0 --as-of \(first) &")
        // The server runs while its first line (the address) is read and the client's steps run
        // against it; then it is stopped (SIGTERM).
        let (_, _, errors) = try await ChildProcessRunner().stream(
            .path(Self.executable.path), arguments: ["--store", store, "serve", "--port", "0", "--as-of", String(first)],
            body: { output in
                var bytes: [UInt8] = []
                try await output.read { chunk in
                    bytes += chunk
                    return !bytes.contains(10)
                }
                defer { output.terminate() }
                let line = String(decoding: bytes, as: UTF8.self)
                Self.say(line.trimmingCharacters(in: .whitespacesAndNewlines))
                guard let base = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }) else {
                    throw CLIError("the demo could not start `strata serve`: \(line)")
                }
                try await Self.client(of: String(base), store: store)
            })
        _ = errors
    }

    /// A second store (the client) that mirrors the served API.
    private static func client(of base: String, store: String) async throws {
        let client = store + "-client"
        defer { try? FileManager.default.removeItem(atPath: client) }
        say("# A second store (the client) mirrors the served API: one page, as version 1 had it.")
        try await step(
            client,
            [
                "source", "add", "cars", "--url", base + "/cars/offers", "--items", "results", "--title", "model",
                "--subtitle", "make", "--subtitle", "price", "--page-param", "page", "--page-size", "10"
            ])
        try await step(client, ["fetch", "cars", "--limit", "1"])
        try await step(client, ["list", "cars", "--limit", "5"])
        try await step(client, ["log", "--type", "CollectionPageFetched", "--limit", "1"])
    }

    /// The write side on the notes dataset (a Firebase-style map): a named user writes two notes,
    /// pushes them, sees "my notes" and "all notes", then edits two notes in a session and accepts it.
    private func notes(server: FixtureServer, store: String) async throws {
        let base = server.baseURL
        say("\n# Notes: the API's notes take writes. Every write is an event, shows at once as pending, and `push` sends it.")
        try await step(
            store, "source", "add", "notes", "--url", base + "/notes/notes", "--id", "@key", "--title", "content",
            "--subtitle", "created_by", "--index", "created_by", "--create-url", base + "/notes/notes",
            "--update-url", base + "/notes/notes/{id}", "--delete-url", base + "/notes/notes/{id}", "--owner-field", "created_by")
        try await step(store, "fetch", "notes")
        try await step(store, "config", "set", "user", "alice")
        try await step(store, "create", "notes", "--set", "content=buy milk", "--set", "create_date=2026-11-25T09:00:00Z")
        try await step(store, "create", "notes", "--set", "content=call Bob", "--set", "create_date=2026-11-25T09:05:00Z")
        try await step(store, "list", "notes", "--mine")
        try await step(store, "push", "notes")
        say("\n# My notes and all notes, now with the server's ids:")
        try await step(store, "list", "notes", "--mine")
        try await step(store, "list", "notes", "--limit", "6")
        say("\n# A session: two edits staged, shown as one patch per note, accepted as one batch, pushed.")
        try await step(store, "edit", "notes", "-N6JWiv7KXjw8LYkx9MZ", "--set", "content=note 1, tidied", "--session", "tidy")
        try await step(store, "edit", "notes", "-NDQcp1ERdq2FSer3GTf", "--set", "content=note 2, tidied", "--session", "tidy")
        try await step(store, "session", "show", "tidy")
        try await step(store, "session", "accept", "tidy")
        try await step(store, "push", "notes")
        try await step(store, "history", "notes", "-N6JWiv7KXjw8LYkx9MZ")
        try await step(store, "outbox", "--all")
    }

    /// Prints `$ strata ARGS` and runs it against the demo store; a failing step stops the demo.
    private func step(_ store: String, _ args: String...) async throws { try await Self.step(store, args) }

    private static func step(_ store: String, _ args: [String]) async throws {
        say("\n$ strata " + args.map { $0.contains(" ") || $0.contains("{") ? "'\($0)'" : $0 }.joined(separator: " "))
        let status = try await Self.run(args, store: store, capture: false).status
        guard status == 0 else { throw CLIError("the demo step `strata \(args.joined(separator: " "))` exited with \(status)") }
    }

    /// The seq of the latest `FetchCompleted`.
    private func lastFetch(_ store: String) async throws -> UInt64 {
        let out = try await Self.run(["log", "--type", "FetchCompleted", "--limit", "1", "--format", "ndjson"], store: store, capture: true).output
        guard let range = out.range(of: #""seq":(\d+)"#, options: .regularExpression),
            let seq = UInt64(out[range].dropFirst(6))
        else { throw CLIError("the demo could not read the last fetch's seq") }
        return seq
    }

    private static func run(_ args: [String], store: String, capture: Bool) async throws -> (status: Int32, output: String) {
        let runner = ChildProcessRunner(), env = ["STRATA_NO_PAGER": "1"]
        guard capture else {
            return (try await runner.interactive(.path(executable.path), arguments: ["--store", store] + args, environment: env).status, "")
        }
        let r = try await runner.collect(.path(executable.path), arguments: ["--store", store] + args, environment: env)
        return (r.exit.status, String(decoding: r.output, as: UTF8.self))
    }

    /// This binary, to run the demo's steps exactly as a user would.
    static var executable: URL {
        let url = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).resolvingSymlinksInPath()
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    }

    private func say(_ text: String) { Self.say(text) }
    private static func say(_ text: String) { emit(text) }
}
