import Foundation
import StrataTestSupport
import Testing

/// A long-running `strata` command (proxy, serve) and the address it printed on its first line.
final class Listening: @unchecked Sendable {
    let process: Spawned
    let base: String
    let stdout: Pipe
    let stderr: Pipe
    init(process: Spawned, base: String, stdout: Pipe, stderr: Pipe) {
        self.process = process; self.base = base; self.stdout = stdout; self.stderr = stderr
    }

    /// Starts `args` and waits for the `http://…` address on its first line.
    static func start(_ args: [String], store: String) async throws -> Listening {
        let (p, out, err) = try startStrata(args, store: store)
        let line = try await offPool { () -> String in
            var bytes: [UInt8] = []
            while !bytes.contains(10) {
                let d = out.fileHandleForReading.availableData
                if d.isEmpty { break }
                bytes += d
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard let url = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }) else {
            p.terminate()
            let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw RawHTTPError(description: "strata \(args.first ?? "") printed no address: \(line) \(e)")
        }
        return Listening(process: p, base: String(url), stdout: out, stderr: err)
    }

    /// SIGTERM, then what it printed after its first line.
    func stop() async throws -> (status: Int32, stdout: String, stderr: String) {
        if process.isRunning { process.terminate() }
        try await waitForExit(process)
        let o = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let e = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, o, e)
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

/// The curl command line's output (`-s`), as bytes.
func curl(_ args: [String]) async throws -> [UInt8] {
    try await offPool {
        let out = Pipe()
        let p = try Spawned(
            executable: "/usr/bin/curl", arguments: ["-s"] + args, environment: ProcessInfo.processInfo.environment, stdin: nil, stdout: out, stderr: nil)
        let d = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return [UInt8](d)
    }
}

/// Runs a program (found on PATH) to completion in `directory`, returning its exit status.
@discardableResult
func run(_ program: String, _ args: [String], in directory: String? = nil) async throws -> Int32 {
    try await offPool {
        let p = try Spawned(
            executable: "/usr/bin/env", arguments: [program] + args, environment: ProcessInfo.processInfo.environment, stdin: nil, stdout: nil,
            stderr: nil, directory: directory)
        return p.terminationStatus
    }
}

/// The events of `store` as `log --format json` gives them, oldest first.
func logEvents(_ store: String, type: String? = nil, stream: String? = nil) async throws -> [[String: Any]] {
    var args = ["log", "--format", "json", "--limit", "100000", "--oldest-first"]
    if let type { args += ["--type", type] }
    if let stream { args += ["--stream", stream] }
    let r = try await strata(args, store: store)
    return (try jsonObject(r.stdout) as? [[String: Any]]) ?? []
}

/// Waits until `store` holds `count` events of `type` (a proxy appends in the background).
func waitForEvents(_ store: String, type: String, count: Int, seconds: Double = 20) async throws -> [[String: Any]] {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        let events = try await logEvents(store, type: type)
        if events.count >= count || Date() > deadline { return events }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// The head seq of `store`.
func headSeq(_ store: String) async throws -> Int {
    let log = try await strata(["log", "--format", "json", "--limit", "1"], store: store)
    return try #require((try jsonObject(log.stdout) as? [[String: Any]])?.first?["seq"] as? Int)
}

/// Every byte of every file under the store directory, for searching.
func storeBytes(_ store: String) throws -> [UInt8] {
    var all: [UInt8] = []
    let files = FileManager.default.enumerator(atPath: store)
    while let name = files?.nextObject() as? String {
        if let d = FileManager.default.contents(atPath: store + "/" + name) { all += d }
    }
    return all
}

extension Array where Element == UInt8 {
    func contains(bytes needle: [UInt8]) -> Bool { Data(self).range(of: Data(needle)) != nil }
}
