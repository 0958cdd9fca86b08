import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// The built `strata` binary next to the test bundle.
let strataBinary: String = {
    if let p = ProcessInfo.processInfo.environment["STRATA_BIN"] { return p }
    var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path, Bundle.main.bundlePath]
    candidates += Bundle.allBundles.map { URL(fileURLWithPath: $0.bundlePath).deletingLastPathComponent().path }
    for dir in candidates {
        let p = dir + "/strata"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return ".build/debug/strata"
}()

/// The test aid (`Tests/StrataTestAid`) beside `strata`: the store actions `strata` has no command for.
let testAidBinary: String = (strataBinary as NSString).deletingLastPathComponent + "/strata-test-aid"

struct RunResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

func makeStoreDir() -> String {
    TestScratch.path("cli")
}

/// Starts `strata` with `args` against the store at `store`.
func startStrata(_ args: [String], store: String, stdin: Data? = nil, env extra: [String: String] = [:]) throws -> (Spawned, Pipe, Pipe) {
    var executable = strataBinary
    var arguments = args
    // `_append-loop` and `_hold-read` are the test aid's `append-loop` and `hold-read`.
    if let first = args.first, first.hasPrefix("_") {
        executable = testAidBinary
        arguments = [String(first.dropFirst())] + args.dropFirst()
    }
    if !executable.hasPrefix("/") { executable = FileManager.default.currentDirectoryPath + "/" + executable }
    var env = ProcessInfo.processInfo.environment
    env["STRATA_STORE"] = store
    env["NO_COLOR"] = "1"
    for (k, v) in extra { env[k] = v }
    let out = Pipe(), err = Pipe()
    // A watcher or server is read only after it stops: a megabyte of pipe (Linux's F_SETPIPE_SZ,
    // 64 KiB by default) keeps a chatty one from blocking on a full stderr until then.
    for pipe in [out, err] { _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, 1031, 1 << 20) }
    let inPipe = stdin.map { _ in Pipe() }
    let writer = inPipe?.fileHandleForWriting
    let p = try Spawned(executable: executable, arguments: arguments, environment: env, stdin: inPipe, stdout: out, stderr: err)
    if let stdin, let writer {
        writer.write(stdin)
        try writer.close()
    }
    return (p, out, err)
}

/// How long one `strata` run may take before the test kills it and fails: a hang fails its
/// test, naming the command, instead of stalling the whole suite.
let childSeconds = Double(ProcessInfo.processInfo.environment["STRATA_TEST_CHILD_SECONDS"] ?? "") ?? 600

/// Runs `strata` to completion. The blocking waits run on a thread of their own, never on Swift's
/// cooperative pool, so servers and fetches in other tests keep running meanwhile.
@discardableResult
func strata(
    _ args: [String], store: String, stdin: Data? = nil, env: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
) async throws -> RunResult {
    let (result, killed) = try await offPool {
        let (p, out, err) = try startStrata(args, store: store, stdin: stdin, env: env)
        let dog = p.watchdog(seconds: childSeconds)
        // Read both pipes before waiting so a full pipe cannot block the child.
        let errBox = DataBox()
        let done = DispatchSemaphore(value: 0)
        Thread {
            errBox.data = err.fileHandleForReading.readDataToEndOfFile(); done.signal()
        }.start()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        let e = errBox.data
        p.waitUntilExit()
        let result = RunResult(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
        return (result, dog.disarm())
    }
    if killed {
        Issue.record(
            "`strata \(args.joined(separator: " "))` ran past \(Int(childSeconds)) s and was killed; stderr: \(result.stderr.suffix(2_000))",
            sourceLocation: sourceLocation)
    }
    return result
}

/// Runs blocking work on a new thread and awaits its result.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        Thread { c.resume(with: Result { try work() }) }.start()
    }
}

/// Waits for a child process without blocking the cooperative pool; one still running after
/// `seconds` (a server or watcher that does not stop when told) is killed and fails the test.
func waitForExit(_ p: Spawned, seconds: Double = 300, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let exited = try await offPool { p.waitUntilExit(seconds: seconds) }
    if !exited { Issue.record("process \(p.processIdentifier) did not exit within \(Int(seconds)) s and was killed", sourceLocation: sourceLocation) }
}

func writeTemp(_ text: String) throws -> String {
    let path = TestScratch.path("cli") + ".json"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

func jsonObject(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
}

final class DataBox: @unchecked Sendable { var data = Data() }
