import Foundation
package import PostgresNIO

/// Where a team log lives, from a `postgres://` URL as libpq reads one:
/// `postgres://USER@HOST[:PORT]/DB`, or `postgres://USER@/DB?host=/SOCKET/DIR` for a unix socket.
/// The password is never part of what is stored: it comes from `$PGPASSWORD`, `~/.pgpass`
/// (or `$PGPASSFILE`), or a `$VAR` template in the URL's password place
/// (`postgres://strata:$TEAM_PG_PASSWORD@db/strata`), resolved when connecting.
/// `?sslmode=disable|prefer|require` (default: `require` with certificate verification for a
/// host that is not loopback, `disable` for loopback and sockets).
package struct TeamLogLocation: Sendable, Hashable {
    package var user: String
    package var host: String?
    package var port: Int
    package var socketDirectory: String?
    package var database: String
    /// `$VAR`: the environment variable holding the password.
    package var passwordVariable: String?
    package var sslMode: String

    /// The URL as given, a password template kept as a template.
    package let url: String

    /// - Throws: ``TeamLogError`` (`.invalidURL`) for a URL that is not a `postgres://` one, or
    ///   that holds a literal password.
    package init(url: String) throws {
        self.url = url
        guard let c = URLComponents(string: url), c.scheme == "postgres" || c.scheme == "postgresql" else {
            throw TeamLogError(.invalidURL, "\(Self.redact(url)) is not a postgres:// URL; e.g. postgres://strata@db.example/strata")
        }
        guard let user = c.user, !user.isEmpty else {
            throw TeamLogError(.invalidURL, "\(Self.redact(url)) names no user; e.g. postgres://strata@db.example/strata")
        }
        self.user = user
        if let p = c.password {
            let name = p.removingPercentEncoding ?? p
            guard name.hasPrefix("$"), name.count > 1, name.dropFirst().allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw TeamLogError(
                    .invalidURL,
                    "a password is never stored: put it in $PGPASSWORD or ~/.pgpass, or name a variable in the URL (postgres://\(user):$VAR@host/db)")
            }
            passwordVariable = String(name.dropFirst())
        }
        let query = Dictionary((c.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        socketDirectory = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        host = c.host.flatMap { $0.isEmpty ? nil : $0 } ?? (socketDirectory == nil ? "localhost" : nil)
        port = c.port ?? Int(query["port"] ?? "") ?? 5432
        let db = String(c.path.drop { $0 == "/" })
        database = db.isEmpty ? user : db
        let loopback = socketDirectory != nil || ["localhost", "127.0.0.1", "::1"].contains(host ?? "")
        sslMode = query["sslmode"] ?? (loopback ? "disable" : "require")
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw TeamLogError(.invalidURL, "sslmode must be disable, prefer or require (verify-full is what require does here)")
        }
    }

    /// The URL with any password taken out, for messages.
    package static func redact(_ url: String) -> String {
        guard var c = URLComponents(string: url), let p = c.password, !p.hasPrefix("$") else { return url }
        c.password = "***"
        return c.string ?? "(a postgres URL)"
    }

    /// The password: the template's variable, else `$PGPASSWORD`, else the first matching line of
    /// the password file; nil when none is set (trust or peer authentication).
    func password(environment: [String: String]) throws -> String? {
        if let v = passwordVariable {
            guard let p = environment[v] else {
                throw TeamLogError(.connection, "the team log's URL takes its password from $\(v), which is not set")
            }
            return p
        }
        if let p = environment["PGPASSWORD"] { return p }
        let file = environment["PGPASSFILE"] ?? (environment["HOME"].map { $0 + "/.pgpass" } ?? "")
        guard !file.isEmpty, let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
        let hostName = socketDirectory == nil ? (host ?? "localhost") : "localhost"
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
            guard f.count == 5 else { continue }
            func matches(_ pattern: String, _ value: String) -> Bool { pattern == "*" || pattern == value }
            if matches(f[0], hostName), matches(f[1], String(port)), matches(f[2], database), matches(f[3], user) { return f[4] }
        }
        return nil
    }

    /// One direct connection's settings (the reachability probe before the pool is used).
    func connectionConfiguration(password: String?) throws -> PostgresConnection.Configuration {
        var config: PostgresConnection.Configuration
        if let socketDirectory {
            config = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            switch sslMode {
            case "disable": tls = .disable
            case "prefer": tls = try .prefer(.init(configuration: .makeClientConfiguration()))
            default: tls = try .require(.init(configuration: .makeClientConfiguration()))
            }
            config = .init(host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: tls)
        }
        config.options.connectTimeout = .seconds(10)
        return config
    }

    /// The pool configuration for this location, its password read from the environment (or
    /// its password file) now: for a tool that talks to the database beside the team log.
    package func clientConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresClient.Configuration {
        configuration(password: try password(environment: environment))
    }

    func configuration(password: String?) -> PostgresClient.Configuration {
        var config: PostgresClient.Configuration
        if let socketDirectory {
            config = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS
            switch sslMode {
            case "disable": tls = .disable
            case "prefer": tls = .prefer(.makeClientConfiguration())
            default: tls = .require(.makeClientConfiguration())  // certificates verified
            }
            config = .init(host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: tls)
        }
        config.options.connectTimeout = .seconds(10)
        config.options.maximumConnections = 4
        return config
    }
}

/// The one error the team log throws.
package struct TeamLogError: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        case invalidURL, connection, newerSchema, diverged, corrupted, notFound
        /// A source's lease is held by another node (or under a newer token): the append was
        /// refused, nothing of it was written.
        case fenced
    }
    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
