import EventStore
import Foundation
package import Logging
import PostgresNIO
import Synchronization

/// The team log on PostgreSQL: one shared, gapless, hash-chained history that Strata stores push
/// their events to and pull the others' from (schema: ``TeamLogSchema``).
///
/// A push sends a store's own events (those it appended, by its local seq after the last one the
/// log has from this node) in batches: first the bodies the log lacks, then, in one transaction
/// holding the head row's lock, the events the log does not hold yet (by id), each given the next
/// global seq and the next link of the chain. Re-sending is harmless: an event already there keeps
/// its seq. A pull appends the log's events after a position, in global order, to a store (each
/// link checked; an event the store holds already, by id, is skipped), and returns the new
/// position. postgres-nio's client owns the connections; ``close()`` ends them.
package final class PostgresTeamLog: Sendable {
    let client: PostgresClient
    let logger: Logger
    private let running: Task<Void, Never>
    package let location: TeamLogLocation
    let probeConfiguration: PostgresConnection.Configuration
    /// Whether ``migrate()`` has run for this instance.
    let migrated = Mutex(false)
    /// How long one database step may take (``run(_:_:)``).
    package let operationTimeout: Duration
    /// The node that events appended through ``EventLog/append(_:)`` come from (a store's node
    /// id, when a store appends through this log).
    package let directNode: String

    /// Connects lazily; nothing is sent until the first call.
    /// - Throws: ``TeamLogError`` when the password's variable is not set.
    /// `environment`: where the password comes from (the process environment when nil).
    package init(
        location: TeamLogLocation, environment: [String: String]? = nil, operationTimeout: Duration = .seconds(30),
        directNode: String = "direct", logger: Logger
    ) throws {
        self.operationTimeout = operationTimeout
        self.directNode = directNode
        let environment = environment ?? ProcessInfo.processInfo.environment
        self.location = location
        self.logger = logger
        let password = try location.password(environment: environment)  // read once, for both
        probeConfiguration = try location.connectionConfiguration(password: password)
        let client = PostgresClient(configuration: location.configuration(password: password), backgroundLogger: logger)
        self.client = client
        running = Task { await client.run() }
    }

    /// Ends the connections; waits at most `grace` for the pool to finish (a pool whose
    /// connection the server cut in the middle of a transaction may never report back, and a
    /// command must still end).
    package func close(grace: Duration = .seconds(2)) async {
        running.cancel()
        let running = self.running
        _ = try? await withDeadline(grace) { await running.value }
    }

    /// postgres-nio's error in words: its code and the server's message (never the query's binds).
    static func describe(_ e: PSQLError) -> String {
        e.code.description + (e.serverInfo?[.message].map { ": \($0)" } ?? "")
    }

    /// Runs a database step, turning postgres-nio's errors into a ``TeamLogError`` that says what
    /// was being done, without the password. A step that has not finished after
    /// ``operationTimeout`` fails with `.connection`: a connection the server or the network cut
    /// mid-transaction does not always report back, and a push must end, not hang.
    func run<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await withDeadline(operationTimeout) { try await body() }
        } catch let e as TeamLogError {
            throw e
        } catch let e as PostgresTransactionError {
            if let inner = e.closureError as? TeamLogError { throw inner }
            let cause: any Error = e.closureError ?? e.commitError ?? e.beginError ?? e.rollbackError ?? e
            let text = (cause as? PSQLError).map(Self.describe) ?? "\(cause)"
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)) (\(text)); the transaction was rolled back, nothing of it was appended; try again"
            )
        } catch let e as PSQLError {
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)) (\(Self.describe(e))); check the URL, that the server runs and the password ($PGPASSWORD, ~/.pgpass)"
            )
        } catch is DeadlinePassed {
            throw TeamLogError(
                .connection,
                "could not \(what) at \(TeamLogLocation.redact(location.url)): no answer in \(operationTimeout) (the connection was cut or the server stalled; nothing was committed unless a retry finds it there); try again"
            )
        } catch {
            throw TeamLogError(.connection, "could not \(what) at \(TeamLogLocation.redact(location.url)): \(error)")
        }
    }
}

struct DeadlinePassed: Error {}

/// `body`'s result, or ``DeadlinePassed`` when it takes longer than `limit`. `body` runs as a task
/// of its own and is cancelled at the deadline; since a stuck await may ignore cancellation, the
/// caller does not wait for it to end.
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let take: @Sendable () -> CheckedContinuation<T, any Error>? = {
        waiting.withLock { w in
            defer { w = nil }; return w
        }
    }
    return try await withCheckedThrowingContinuation { c in
        waiting.withLock { $0 = c }
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            take()?.resume(with: result)
        }
        Task {
            try? await Task.sleep(for: limit)
            if let c = take() {
                work.cancel()
                c.resume(throwing: DeadlinePassed())
            }
        }
    }
}
