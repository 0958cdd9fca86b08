import Foundation
import Subprocess

#if canImport(System)
    import System
#else
    import SystemPackage
#endif

/// Every child process Strata starts goes through here (on swift-subprocess): `git` for imports,
/// `--exec` alerts, bisect's command, `$EDITOR`, the pager and the demo's steps. swift-subprocess
/// spawns with `posix_spawn` and closes the descriptors the child should not inherit with
/// `close_range`, where Foundation's `Process` lists `/proc/self/fd` and crashes once a process
/// holds about 1,300 descriptors (swift-corelibs-foundation#5472).
///
/// Three shapes: ``interactive(_:arguments:environment:input:output:timeout:)`` on this process's
/// terminal, ``collect(_:arguments:environment:input:outputLimit:errorLimit:timeout:)`` capturing
/// what it prints, and ``stream(_:arguments:environment:input:body:)`` for a conversation. A
/// timeout stops the child (SIGTERM, then SIGKILL 5 s later) and reports it as stopped.
package struct ChildProcessRunner: Sendable {
    package init() {}

    /// What to run.
    package enum Program: Sendable, Hashable, CustomStringConvertible {
        /// An executable looked up on `PATH`.
        case name(String)
        /// An executable at a path.
        case path(String)
        /// A command line for `/bin/sh -c` (a user's `$EDITOR`, `$PAGER`, an alert's `--exec`).
        case shell(String)

        /// A command line's first word: a path when it has a slash, else a name on `PATH`.
        package static func command(_ word: String) -> Program { word.contains("/") ? .path(word) : .name(word) }

        package var description: String {
            switch self {
            case .name(let n): n
            case .path(let p): p
            case .shell(let c): c
            }
        }
    }

    /// How a child ended.
    package enum Exit: Sendable, Hashable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)
        /// Stopped because it ran past its timeout.
        case timedOut

        package var succeeded: Bool { self == .exited(0) }

        /// The status a shell reports: the exit code, or 128 + the signal.
        package var status: Int32 {
            switch self {
            case .exited(let c): c
            case .signaled(let s): 128 + s
            case .timedOut: 128 + SIGTERM
            }
        }

        package var description: String {
            switch self {
            case .exited(let c): "exited \(c)"
            case .signaled(let s): "was stopped by signal \(s)"
            case .timedOut: "ran past its time and was stopped"
            }
        }
    }

    /// The child could not be started (no such program, a spawn failure).
    package struct StartError: Error, Sendable, CustomStringConvertible {
        package var program: String
        package var reason: String
        package var description: String { "cannot run \(program): \(reason)" }
    }

    /// Where an interactive child's standard output goes.
    package enum Destination: Sendable { case standardOutput, standardError }

    /// Runs on this process's terminal: standard input is `input` (when given) or the terminal's,
    /// standard output goes to `output`, standard error to this process's.
    package func interactive(
        _ program: Program, arguments: [String] = [], environment: [String: String] = [:], input: [UInt8]? = nil,
        output: Destination = .standardOutput, timeout: Duration? = nil
    ) async throws -> Exit {
        let (executable, args) = Self.command(program, arguments)
        let env = Self.environment(environment)
        let out: FileDescriptorOutput = output == .standardOutput ? .currentStandardOutput : .currentStandardError
        return try await Self.bounded(program, timeout) { options in
            if let input {
                (
                    try await run(
                        executable, arguments: args, environment: env, platformOptions: options, input: try Self.file(holding: input), output: out,
                        error: .currentStandardError
                    ).terminationStatus, ()
                )
            } else {
                (
                    try await run(
                        executable, arguments: args, environment: env, platformOptions: options, input: .currentStandardInput, output: out,
                        error: .currentStandardError
                    ).terminationStatus, ()
                )
            }
        }.exit
    }

    /// What a collected child printed.
    package struct Collected: Sendable {
        package var exit: Exit
        /// Standard output, up to the limit asked for.
        package var output: [UInt8]
        /// The first bytes of standard error, up to the limit asked for.
        package var errorOutput: [UInt8]
        /// The part of standard error kept, as text, trimmed.
        package var errorText: String { String(decoding: errorOutput, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Runs with `input` on standard input and keeps the first `outputLimit` bytes of standard
    /// output and `errorLimit` of standard error (the rest is read and dropped, so a chatty
    /// child never blocks on a full pipe).
    package func collect(
        _ program: Program, arguments: [String] = [], environment: [String: String] = [:], input: [UInt8] = [],
        outputLimit: Int = 64 << 20, errorLimit: Int = 4096, timeout: Duration? = nil
    ) async throws -> Collected {
        let (executable, args) = Self.command(program, arguments)
        let env = Self.environment(environment)
        let (exit, kept) = try await Self.bounded(program, timeout) { options in
            let result = try await run(
                executable, arguments: args, environment: env, platformOptions: options, input: try Self.file(holding: input), output: .sequence,
                error: .sequence
            ) { execution in
                async let errors: [UInt8] = Self.head(execution.standardError, limit: errorLimit)
                let output = try await Self.head(execution.standardOutput, limit: outputLimit)
                return (output, try await errors)
            }
            return (result.terminationStatus, result.closureResult)
        }
        return Collected(exit: exit, output: kept?.0 ?? [], errorOutput: kept?.1 ?? [])
    }

    /// A conversation: `input` on standard input, `body` reads standard output as it comes;
    /// standard error's first 4 KiB are kept. Returns what `body` returned and how the child
    /// ended. `body` may end the child early with the ``Output/terminate()`` it is given.
    package func stream<R: Sendable>(
        _ program: Program, arguments: [String] = [], environment: [String: String] = [:], input: [UInt8] = [],
        body: @escaping @Sendable (Output) async throws -> R
    ) async throws -> (value: R, exit: Exit, errorOutput: [UInt8]) {
        let (executable, args) = Self.command(program, arguments)
        let env = Self.environment(environment)
        let result: ExecutionResult<(R, [UInt8]), SequenceOutput, SequenceOutput>
        do {
            result = try await run(
                executable, arguments: args, environment: env, input: try Self.file(holding: input), output: .sequence, error: .sequence
            ) { execution in
                async let errors: [UInt8] = Self.head(execution.standardError, limit: 4096)
                let output = Output(reader: Reader(execution.standardOutput), stop: { try? execution.send(signal: .terminate) })
                let value = try await body(output)
                // What `body` left unread is drained, so the child never blocks on a full pipe.
                try await output.read { _ in true }
                return (value, try await errors)
            }
        } catch let e as SubprocessError {
            throw StartError(program: program.description, reason: "\(e)")
        }
        let (value, errors) = result.closureResult
        return (value, Self.exit(result.terminationStatus), errors)
    }

    /// A child's standard output inside ``stream(_:arguments:environment:input:body:)``: chunks
    /// as they come.
    package struct Output: Sendable {
        let reader: Reader
        let stop: @Sendable () -> Void

        /// Hands `each` the chunks as they come, until it returns false or the output ends.
        package func read(_ each: ([UInt8]) async throws -> Bool) async throws {
            while let chunk = try await reader.next() {
                guard try await each(chunk) else { return }
            }
        }

        /// Ends the child (SIGTERM).
        package func terminate() { stop() }
    }

    /// The one iterator of a single-pass output sequence, shared by the body and the drain
    /// after it (used by one task at a time).
    final class Reader: @unchecked Sendable {
        private var iterator: SubprocessOutputSequence.Iterator
        init(_ sequence: SubprocessOutputSequence) { iterator = sequence.makeAsyncIterator() }
        func next() async throws -> [UInt8]? {
            try await iterator.next().map { buffer in buffer.withUnsafeBytes { Array($0) } }
        }
    }

    // MARK: Internals

    /// `bytes` as a child's standard input: an unlinked temporary file, read from its start. A
    /// file rather than a pipe: a child that exits without reading its input (`--exec true`)
    /// leaves no write half-done on a closed pipe, which swift-subprocess 1.0.2 answers with a
    /// trap ("FileDescriptor … was not closed").
    private static func file(holding bytes: [UInt8]) throws -> FileDescriptorInput {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-input-\(UUID().uuidString)").path
        let fd = try FileDescriptor.open(FilePath(path), .readWrite, options: [.create, .exclusiveCreate], permissions: [.ownerReadWrite])
        unlink(path)
        do {
            _ = try fd.writeAll(bytes)
            _ = try fd.seek(offset: 0, from: .start)
        } catch {
            try? fd.close()
            throw error
        }
        return .fileDescriptor(fd, closeAfterSpawningProcess: true)
    }

    private static func head(_ sequence: SubprocessOutputSequence, limit: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await buffer in sequence where out.count < limit {
            buffer.withUnsafeBytes { b in out += b.prefix(limit - out.count) }
        }
        return out
    }

    private static func command(_ program: Program, _ arguments: [String]) -> (Executable, Arguments) {
        switch program {
        case .name(let n): (.name(n), Arguments(arguments))
        case .path(let p): (.path(FilePath(p)), Arguments(arguments))
        // `sh -c COMMAND NAME ARGS…`: the arguments are $1… of the command line.
        case .shell(let c): (.path("/bin/sh"), Arguments(["-c", c, "strata"] + arguments))
        }
    }

    private static func environment(_ updates: [String: String]) -> Environment {
        updates.isEmpty ? .inherit : .inherit.updating(Dictionary(uniqueKeysWithValues: updates.map { (Environment.Key(stringLiteral: $0.key), $0.value) }))
    }

    private static func exit(_ status: TerminationStatus) -> Exit {
        switch status {
        case .exited(let c): .exited(c)
        case .signaled(let s): .signaled(s)
        }
    }

    private struct TimedOut: Error {}

    /// Runs `start` (which runs the child with the platform options it is given and returns how
    /// it ended and what it kept), stopping the child when it runs past `timeout`: cancelled,
    /// swift-subprocess sends SIGTERM, then SIGKILL after 5 s (nothing kept then).
    private static func bounded<T: Sendable>(
        _ program: Program, _ timeout: Duration?, _ start: @escaping @Sendable (PlatformOptions) async throws -> (TerminationStatus, T)
    ) async throws -> (exit: Exit, kept: T?) {
        var options = PlatformOptions()
        options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: .seconds(5))]
        do {
            guard let timeout else {
                let (status, kept) = try await start(options)
                return (exit(status), kept)
            }
            return try await withThrowingTaskGroup(of: (exit: Exit, kept: T?).self) { group in
                group.addTask { [options] in
                    let (status, kept) = try await start(options)
                    return (exit(status), kept)
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw TimedOut()
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch is TimedOut {
            return (.timedOut, nil)
        } catch let e as SubprocessError {
            throw StartError(program: program.description, reason: "\(e)")
        }
    }
}
