package import ChildProcess
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
    let runner: ChildProcessRunner

    package init(timeout: Double = 60, runner: ChildProcessRunner) {
        self.timeout = timeout
        self.runner = runner
    }

    public func send(_ body: [UInt8], command: String, environment: [String: String]) async -> SendOutcome {
        // Its output is read and dropped as it comes, its stderr's first 500 bytes say what went
        // wrong; one that runs past the timeout is stopped.
        let run: ChildProcessRunner.Collected
        do {
            run = try await runner.collect(
                .shell(command), environment: environment, input: body, outputLimit: 0, errorLimit: 500, timeout: .milliseconds(Int(timeout * 1000)))
        } catch {
            return .refused("cannot run `\(command)`: \(error)", status: nil)
        }
        if run.exit.succeeded { return .delivered(status: nil) }
        let message = run.errorText
        return .retry("`\(command)` \(run.exit)" + (message.isEmpty ? "" : ": \(message)"), status: nil)
    }
}
