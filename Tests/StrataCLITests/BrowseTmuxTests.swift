import CTestSpawn
import FixtureServer
import Foundation
import StrataJSON
import StrataTestSupport
import TestScratch
import Testing

final class PIDBox: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [Int32] = []
    func set(_ v: [Int32]) { lock.withLock { ids = v } }
    func get() -> [Int32] { lock.withLock { ids } }
}

/// A private tmux server running one pane: the real terminal the browser is tested in.
final class Tmux: @unchecked Sendable {
    let socket = "strata-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") }

    /// Runs a tmux command and returns its output. `capture` false for the command that starts
    /// the server: the server daemon would inherit the pipe and never close it.
    /// Off Swift's cooperative pool (a blocking wait there would starve the dispatch source
    /// that notices the child's exit).
    @discardableResult
    func run(_ args: [String], capture: Bool = true) async throws -> String {
        try await offPool { try self.runBlocking(args, capture: capture) }
    }

    /// posix_spawn and waitpid directly, with no descriptor inherited past stderr: the client that
    /// starts the server forks the long-lived server off, and Foundation's Process notices a
    /// child's exit through a socket the child inherits — a server holding it hangs the waiter.
    func runBlocking(_ args: [String], capture: Bool) throws -> String {
        let argv = (["tmux", "-L", socket, "-f", "/dev/null"] + args).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw CocoaError(.fileWriteUnknown) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if capture { posix_spawn_file_actions_adddup2(&actions, fds[1], 1) } else { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
        // Nothing else of this process's: the tmux server this client may start lives on, and an
        // inherited descriptor of another test's Foundation.Process (its exit-detection socket)
        // would keep that process looking alive for as long as the server runs.
        cts_addclosefrom(&actions, 3)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/usr/bin/tmux", &actions, nil, argv, environ)
        close(fds[1])
        defer { close(fds[0]) }
        guard rc == 0 else { throw CocoaError(.executableLoad) }
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 8192)
        while capture {
            let n = read(fds[0], &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            output += buffer[..<n]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return String(decoding: output, as: UTF8.self)
    }

    private let pids = PIDBox()

    func start(_ command: String, columns: Int = 80, rows: Int = 24) async throws {
        try await run(["new-session", "-d", "-x", "\(columns)", "-y", "\(rows)", command], capture: false)
        let ids = try await run(["display", "-p", "#{pid} #{pane_pid}"]).split(separator: " ").compactMap {
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        pids.set(ids)
    }

    func send(_ keys: String...) async throws { try await run(["send-keys"] + keys) }
    func send(contentsOf keys: [String]) async throws { try await run(["send-keys"] + keys) }
    func type(_ text: String) async throws { try await run(["send-keys", "-l", text]) }
    func screen() async -> String { (try? await run(["capture-pane", "-p"])) ?? "" }
    func lines() async -> [String] { await screen().split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    func alternateScreen() async -> Bool { (try? await run(["display", "-p", "#{alternate_on}"]))?.hasPrefix("1") ?? false }
    func panePID() async -> Int32 { Int32((try? await run(["display", "-p", "#{pane_pid}"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0 }
    func resize(columns: Int, rows: Int) async throws { try await run(["resize-window", "-x", "\(columns)", "-y", "\(rows)"]) }
    /// Ends the server and everything in its pane, whatever state the test left them in (a pane
    /// whose program survived the hangup would keep the server alive).
    func kill() {
        _ = try? runBlocking(["kill-server"], capture: false)
        let ids = pids.get()
        guard ids.count == 2 else { return }
        for pid in BrowseTmuxTests.descendants(of: ids[1]) + [ids[1], ids[0]] { Glibc.kill(pid, SIGKILL) }
    }

    /// Waits (polling the screen, never a fixed sleep) until `condition` holds, up to `seconds`.
    func waitFor(_ what: String, seconds: Double = 15, _ condition: (String) async -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition(await screen()) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting for \(what); the screen:\n\(await screen())")
        throw CancellationError()
    }

    func waitFor(text: String, seconds: Double = 15) async throws {
        try await waitFor("'\(text)'", seconds: seconds) { $0.contains(text) }
    }

    /// The line the selection marker is on.
    func selectedLine() async -> String? { await lines().first { $0.hasPrefix("▶ ") } }
}

@Suite(.serialized, .enabled(if: Tmux.isAvailable, "tmux is not installed: run `make deps`"))
struct BrowseTmuxTests {
    static func prepare() async throws -> (FixtureServer, String) {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        let store = makeStoreDir()
        let add = try await strata(
            [
                "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                "--subtitle", "make", "--subtitle", "price", "--image", "image", "--page-param", "page", "--page-size", "10",
                "--index", "make,model", "--detail-url", server.baseURL + "/cars/offers/{id}"
            ], store: store)
        #expect(add.status == 0, "\(add.stderr)")
        let fetch = try await strata(["fetch", "cars", "--details", "--images"], store: store)
        #expect(fetch.status == 0, "\(fetch.stderr)")
        return (server, store)
    }

    static func command(_ store: String, _ args: String, after: String = "") -> String {
        "env STRATA_STORE=\(store) TERM=xterm-256color COLORTERM= NO_COLOR= timeout --foreground 120 \(strataBinary) browse \(args); stty -a > \(store).stty; \(after) sleep 60"
    }

    /// Open, move, filter, open a detail, refresh (success, then a 500 and its pop-up), a second
    /// process's fetch, resize, step the slider back to an old price, quit: the terminal is back.
    @Test func aSessionThroughEveryScreen() async throws {
        let (server, store) = try await Self.prepare()
        defer { Task { await server.stop() } }
        let tmux = Tmux()
        defer { tmux.kill() }
        try await tmux.start(Self.command(store, ""))
        // The sources screen, then the list.
        try await tmux.waitFor(text: "SOURCE")
        let first = await tmux.screen()
        #expect(first.contains("cars") && first.contains("24"))
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "Passat")
        #expect(await tmux.alternateScreen())
        try await tmux.send("j", "j")
        try await tmux.waitFor("the cursor on RAV4") { _ in await tmux.selectedLine()?.contains("RAV4") == true }
        // Filter through the index.
        try await tmux.send("/")
        try await tmux.type("make=Toyota")
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "/make=Toyota (index)")
        #expect(await tmux.screen().contains("Passat") == false)
        // The detail: downloaded, then shown from the store; scrolls; back.
        try await tmux.send("j")
        try await tmux.waitFor("RAV4 selected") { _ in await tmux.selectedLine()?.contains("RAV4") == true }
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "seller.city")
        let detail = await tmux.screen()
        #expect(detail.contains("RAV4") && detail.contains("12300"))
        try await tmux.send("?")
        try await tmux.waitFor(text: "Keys: detail")
        try await tmux.send("Escape")
        try await tmux.waitFor("help closed") { !$0.contains("Keys: detail") }
        try await tmux.send("q")
        try await tmux.waitFor(text: "/make=Toyota")
        // A refresh that succeeds (the API's next version: RAV4 now 11900), in the background.
        server.version = 2
        try await tmux.send("r")
        try await tmux.waitFor(text: "fetched 3 pages")
        try await tmux.waitFor(text: "11900")
        #expect(await tmux.selectedLine()?.contains("RAV4") == true, "the cursor stays on the same item")
        // A refresh that fails: a pop-up with the reason; the data stays behind it.
        server.setFault(.serverError, for: "/cars/offers")
        try await tmux.send("r")
        try await tmux.waitFor(text: "Refresh failed")
        let failed = await tmux.screen()
        #expect(failed.contains("500") && failed.contains("RAV4"))
        try await tmux.send("Enter")
        try await tmux.waitFor("the pop-up closed") { !$0.contains("Refresh failed") && $0.contains("RAV4") }
        server.setFault(nil, for: "/cars/offers")
        // Another process fetches the third version: the browser shows it within a second or so.
        let before = await tmux.screen().components(separatedBy: "live · seq ").last?.prefix(while: \.isNumber) ?? ""
        server.version = 3
        #expect(try await strata(["fetch", "cars"], store: store).status == 0)
        try await tmux.waitFor("the new head", seconds: 5) { s in
            !before.isEmpty && !s.contains("live · seq \(before) ") && s.contains("live · seq ")
        }
        // Landscape: the detail beside the list, no garbage from the old size.
        try await tmux.resize(columns: 120, rows: 40)
        try await tmux.waitFor("the wide layout") { s in s.split(separator: "\n").contains { $0.contains("│") && $0.contains("TITLE") } }
        #expect(await tmux.lines().filter { !$0.isEmpty }.allSatisfy { $0.count <= 120 })
        try await tmux.resize(columns: 80, rows: 24)
        try await tmux.waitFor("the narrow layout") { s in !s.split(separator: "\n").contains { $0.contains("│") && $0.contains("TITLE") } }
        // The slider: back to RAV4's earlier version, the old price on screen.
        try await tmux.waitFor("RAV4 selected") { _ in await tmux.selectedLine()?.contains("RAV4") == true }
        // `{` jumps to the selected item's previous change: v3's, then v2's, then the first fetch's.
        var found = false
        for _ in 0..<4 where !found {
            let before = await tmux.screen()
            try await tmux.send("{")
            try await tmux.waitFor("the slider moved") { $0 != before }
            try await Task.sleep(for: .milliseconds(300))
            found = await tmux.screen().contains("Toyota · 12300")
        }
        let past = await tmux.screen()
        #expect(found, "the first price of RAV4 was never shown: \(past)")
        #expect(past.contains("as of seq"))
        #expect(await tmux.selectedLine()?.contains("RAV4") == true)
        try await tmux.send("L")
        try await tmux.waitFor(text: "live · seq")
        // Quit: the terminal leaves the alternate screen, with echo and canonical mode back.
        try await tmux.send("q")
        try await tmux.waitFor(text: "SOURCE")
        try await tmux.send("q")
        try await tmux.waitFor("the browser exited") { _ in await tmux.alternateScreen() == false }
        try await Task.sleep(for: .milliseconds(200))
        let stty = try String(contentsOfFile: store + ".stty", encoding: .utf8)
        #expect(stty.contains(" echo ") && stty.contains(" icanon "), "\(stty)")
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    /// Writes from the browser against the fixture's notes API: `e` stages an edit, `c` cancels
    /// it, `e` again and `a` accepts it, `d` asks then deletes, `n` creates, `P` pushes; the
    /// server has each write once, and `strata session show` and `outbox` agree.
    @Test func writesFromTheBrowserReachTheServerOnce() async throws {
        let server = FixtureServer(root: fixturesRoot)
        try await server.start()
        defer { Task { await server.stop() } }
        let store = makeStoreDir()
        try await WriteCLITests.addNotes(server, store: store)
        #expect(try await strata(["fetch", "notes"], store: store).status == 0)
        #expect(try await strata(["config", "set", "user", "alice"], store: store).status == 0)
        let ids = try #require(try jsonObject(try await strata(["list", "notes", "--limit", "2", "--format", "json"], store: store).stdout) as? [[String: Any]])
            .compactMap { $0["id"] as? String }
        #expect(ids.count == 2)
        let tmux = Tmux()
        defer { tmux.kill() }
        try await tmux.start(Self.command(store, "notes"))
        try await tmux.waitFor(text: "note 1")
        // An edit staged, then cancelled: the bar comes and goes, nothing is written.
        try await tmux.send("e")
        try await tmux.waitFor(text: "edit \(ids[0]): content=")
        try await tmux.send(contentsOf: Array(repeating: "BSpace", count: 80))
        try await tmux.type("content=not this")
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "1 change in 1 item staged (session browse)")
        try await tmux.send("c")
        try await tmux.waitFor(text: "cancelled: 1 staged edit discarded")
        #expect(await !tmux.screen().contains("staged (session"))
        // Staged again and accepted.
        try await tmux.send("e")
        try await tmux.waitFor(text: "edit \(ids[0]): content=")
        try await tmux.send(contentsOf: Array(repeating: "BSpace", count: 80))
        try await tmux.type("content=edited in the browser")
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "[a]ccept [c]ancel")
        try await tmux.send("a")
        try await tmux.waitFor(text: "accepted 1 patch")
        try await tmux.waitFor(text: "edited in the browser")
        // The second note: asked first, deleted on y.
        try await tmux.send("j")
        try await tmux.send("d")
        try await tmux.waitFor(text: "Delete \(ids[1])?")
        try await tmux.send("y")
        try await tmux.waitFor(text: "deleted \(ids[1])")
        // A new note.
        try await tmux.send("n")
        try await tmux.waitFor(text: "new (field=value; …):")
        try await tmux.type("content=written in the browser")
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "3 to push (P)")
        let pending = await tmux.screen()
        #expect(pending.contains("written in the browser") && pending.contains("↑"), "\(pending)")
        // Pushed: every write reaches the server once.
        try await tmux.send("P")
        try await tmux.waitFor(text: "pushed: 3 acknowledged")
        #expect(await !tmux.screen().contains("to push (P)"))
        #expect(server.item(list: "/notes/notes", key: ids[0])?.value(atPath: "content") == .string("edited in the browser"))
        #expect(server.item(list: "/notes/notes", key: ids[1]) == nil)
        guard case .object(let notes)? = server.list("/notes/notes") else { Issue.record("no notes on the server"); return }
        let created = notes.values.filter { $0.value(atPath: "content") == .string("written in the browser") }
        #expect(created.count == 1 && created.first?.value(atPath: "created_by") == .string("alice"))
        #expect(server.appliedWrites.count == 3 && server.appliedWrites.values.allSatisfy { $0 == 1 })
        try await tmux.send("q")
        try await tmux.waitFor("the browser exited") { _ in await tmux.alternateScreen() == false }
        // The CLI sees what the browser did: the session accepted, nothing left in the outbox.
        let session = try await strata(["session", "show", "browse"], store: store)
        #expect(session.stdout.contains("accepted"), "\(session.stdout)")
        #expect(try await strata(["outbox"], store: store).stdout.contains("the outbox is empty"))
        #expect(try await strata(["verify"], store: store).status == 0)
    }

    /// SIGTERM restores the terminal as `q` does.
    @Test func sigtermRestoresTheTerminal() async throws {
        let (server, store) = try await Self.prepare()
        defer { Task { await server.stop() } }
        let tmux = Tmux()
        defer { tmux.kill() }
        try await tmux.start(Self.command(store, "cars"))
        try await tmux.waitFor(text: "Passat")
        #expect(await tmux.alternateScreen())
        let pid = try #require(Self.descendant(named: "strata", of: await tmux.panePID()))
        kill(pid, SIGTERM)
        try await tmux.waitFor("the browser exited") { _ in await tmux.alternateScreen() == false }
        try await tmux.waitFor("stty written", seconds: 5) { _ in FileManager.default.fileExists(atPath: store + ".stty") }
        try await Task.sleep(for: .milliseconds(200))
        let stty = try String(contentsOfFile: store + ".stty", encoding: .utf8)
        #expect(stty.contains(" echo ") && stty.contains(" icanon "), "\(stty)")
    }

    /// Ctrl-Z gives the terminal back to the shell (the job stopped); `fg` re-enters and repaints.
    @Test func ctrlZSuspendsAndFgResumes() async throws {
        let (server, store) = try await Self.prepare()
        defer { Task { await server.stop() } }
        let tmux = Tmux()
        defer { tmux.kill() }
        try await tmux.start("env PS1='$ ' bash --norc -i")
        try await tmux.waitFor(text: "$")
        try await tmux.type("STRATA_STORE=\(store) TERM=xterm-256color \(strataBinary) browse cars")
        try await tmux.send("Enter")
        try await tmux.waitFor(text: "Passat")
        try await tmux.send("C-z")
        try await tmux.waitFor("the job stopped") { s in s.contains("Stopped") }
        #expect(await tmux.alternateScreen() == false)
        try await tmux.type("fg")
        try await tmux.send("Enter")
        try await tmux.waitFor("the browser back") { s in s.contains("Passat") && s.contains("Strata · cars") }
        #expect(await tmux.alternateScreen())
        try await tmux.send("j")
        try await tmux.waitFor("keys work again") { _ in await tmux.selectedLine()?.contains("Yaris") == true }
        try await tmux.send("q")
        try await tmux.waitFor("the browser exited") { _ in await tmux.alternateScreen() == false }
    }

    /// Every process below `pid`.
    static func descendants(of pid: Int32) -> [Int32] {
        let children = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? "")
            .split(separator: " ").compactMap { Int32($0) }
        return children.flatMap { descendants(of: $0) + [$0] }
    }

    /// The first process called `name` below `pid`.
    static func descendant(named name: String, of pid: Int32) -> Int32? {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ Int32($0) }) {
            let comm = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            if comm == name { return child }
            if let found = descendant(named: name, of: child) { return found }
        }
        return nil
    }

    @Test func notATerminalIsAUsageErrorPointingAtList() async throws {
        let r = try await strata(["browse"], store: makeStoreDir())
        #expect(r.status == 64)
        #expect(r.stderr.contains("strata list"))
    }
}
