import Foundation
import Synchronization

/// What one delivery attempt came to.
public enum SendOutcome: Sendable, Equatable {
    case delivered(status: Int?)
    /// Worth trying again later: a connection failure, a timeout, 408, 429, 5xx, an exec that
    /// exited non-zero.
    case retry(String, status: Int?)
    /// Refused for good: any other 4xx; an exec that could not be started.
    case refused(String, status: Int?)
}

/// Delivers a notification's body by `POST` to a webhook, with its id as `Idempotency-Key`.
public struct WebhookSender: Sendable {
    let client: any HTTPClient
    let userAgent: String
    let timeout: Double

    public init(client: any HTTPClient, userAgent: String, timeout: Double = 15) {
        self.client = client
        self.userAgent = userAgent
        self.timeout = timeout
    }

    public func send(_ body: [UInt8], id: String, alert: String, to url: String) async -> SendOutcome {
        let request = HTTPRequest(
            url: url, method: "POST", body: body,
            headers: [
                ("Content-Type", "application/json"), ("Idempotency-Key", id), ("Strata-Alert", alert), ("User-Agent", userAgent)
            ], timeout: timeout, maxBytes: 1 << 20)
        do {
            let response = try await client.send(request)
            switch response.status {
            case 200..<300: return .delivered(status: response.status)
            case 408, 429, 500...: return .retry("the receiver answered \(response.status)", status: response.status)
            default: return .refused("the receiver refused it with \(response.status)", status: response.status)
            }
        } catch {
            return .retry("\(error)", status: nil)
        }
    }
}

/// Delivers a notification by running a command (`/bin/sh -c`) with the body on stdin and the
/// notification's facts in the environment. Exit 0 is delivered.
public struct ExecSender: Sendable {
    let timeout: Double

    public init(timeout: Double = 60) { self.timeout = timeout }

    public func send(_ body: [UInt8], command: String, environment: [String: String]) async -> SendOutcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        let exited = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { p in
            exited.continuation.yield(p.terminationStatus)
            exited.continuation.finish()
        }
        do { try process.run() } catch {
            return .refused("cannot run `\(command)`: \(error)", status: nil)
        }
        // Written from a thread of its own: a command that does not read its input must not block us.
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: Data(body))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        // Its stderr is drained as it comes (a command that writes more than a pipe holds would
        // otherwise block until the timeout); the first 500 bytes say what went wrong.
        let stderrHead = Mutex<(bytes: [UInt8], done: Bool)>(([], false))
        let reader = Thread {
            let handle = errors.fileHandleForReading
            while let chunk = try? handle.read(upToCount: 65_536), !chunk.isEmpty {
                stderrHead.withLock { if $0.bytes.count < 500 { $0.bytes += chunk.prefix(500 - $0.bytes.count) } }
            }
            stderrHead.withLock { $0.done = true }
        }
        reader.start()
        let watchdog = Task {
            try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            if process.isRunning { process.terminate() }
        }
        var status: Int32 = -1
        for await s in exited.stream { status = s }
        watchdog.cancel()
        // A child the command left running may hold the pipe open: wait for the end a moment only.
        for _ in 0..<25 where !stderrHead.withLock({ $0.done }) { try? await Task.sleep(for: .milliseconds(20)) }
        let message = String(decoding: stderrHead.withLock { $0.bytes }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if status == 0 { return .delivered(status: nil) }
        let reason = process.terminationReason == .uncaughtSignal ? "was stopped by signal \(status)" : "exited \(status)"
        return .retry("`\(command)` \(reason)" + (message.isEmpty ? "" : ": \(message)"), status: nil)
    }
}
