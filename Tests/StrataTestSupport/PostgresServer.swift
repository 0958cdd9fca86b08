import CTestSpawn
import Foundation

/// A throwaway PostgreSQL 15 cluster for one test: `initdb` in a temp directory (as the
/// unprivileged `postgres` user when the tests run as root, since initdb refuses root), trust
/// authentication, a unix socket in that directory and no TCP. `stop()` shuts it down fast;
/// `crash()` with `-m immediate`.
public final class PostgresServer: @unchecked Sendable {
    public let directory: String
    public var data: String { directory + "/data" }
    public var socketDirectory: String { directory }
    public let port = 5432
    public static let user = "strata"

    /// `postgres://strata@/strata?host=DIR`, the URL Strata takes.
    public var url: String { "postgres://\(Self.user)@/strata?host=\(socketDirectory)" }

    static let binaries: String = {
        for dir in ["/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/local/bin", "/usr/bin"]
        where FileManager.default.isExecutableFile(atPath: dir + "/initdb") { return dir }
        return "/usr/lib/postgresql/15/bin"
    }()

    public init() throws {
        // A short path: a unix socket's path must fit in 107 bytes.
        directory = "/tmp/strata-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        try asOwner(Self.binaries + "/initdb", ["-D", data, "-A", "trust", "-U", Self.user, "--no-sync", "-E", "UTF8"])
        try start()
        try asOwner(Self.binaries + "/createdb", ["-h", socketDirectory, "-U", Self.user, "strata"])
    }

    public func start() throws {
        try asOwner(
            Self.binaries + "/pg_ctl",
            [
                "-D", data, "-l", directory + "/log", "-w", "-o",
                "-k \(socketDirectory) -c listen_addresses='' -c fsync=off -c max_connections=50", "start"
            ])
    }

    public func stop() {
        _ = try? asOwner(Self.binaries + "/pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
    }

    /// Stops it as a crash would (no checkpoint).
    public func crash() {
        _ = try? asOwner(Self.binaries + "/pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
    }

    /// Runs `sql` with psql; returns its output.
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try asOwner(Self.binaries + "/psql", ["-h", socketDirectory, "-U", Self.user, "-d", "strata", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    private func asOwner(_ tool: String, _ args: [String]) throws -> String {
        if getuid() == 0 { return try Self.run("/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--clear-groups", tool] + args) }
        return try Self.run(tool, args)
    }

    /// posix_spawn and waitpid, output to a file, no descriptor inherited past stderr: the server
    /// pg_ctl starts lives on, and would hold a pipe (or Foundation.Process's exit-detection
    /// socket) open forever. Blocking: call it off Swift's cooperative pool.
    @discardableResult
    static func run(_ tool: String, _ args: [String]) throws -> String {
        let outPath = "/tmp/strata-pg-out-\(UUID().uuidString)"
        defer { unlink(outPath) }
        // Through sh, to start in /tmp (the postgres user may not read the test's directory).
        let argv = (["/bin/sh", "-c", "cd /tmp && exec \"$0\" \"$@\"", tool] + args).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        cts_addclosefrom(&actions, 3)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        guard rc == 0 else { throw PostgresServerError(description: "could not start \(tool): \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw PostgresServerError(description: "\(tool) \(args.joined(separator: " ")) failed (\(status)): \(text)")
        }
        return text
    }
}

public struct PostgresServerError: Error, CustomStringConvertible { public var description: String }

/// Runs blocking work (starting or stopping a server) on a thread of its own, off the pool.
public func offPoolThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in Thread { c.resume(with: Result { try work() }) }.start() }
}
