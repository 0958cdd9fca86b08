import ArgumentParser
import EventStore
import Foundation
import StrataApp

// The child processes of the crash, concurrency and stale-reader tests: store-level actions the
// `strata` tool has no command for, on a store opened the way `strata` opens it.

@main
struct StrataTestAid: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-test-aid", abstract: "Store actions for Strata's tests.",
        subcommands: [AppendLoopCommand.self, HoldReadCommand.self])
}

/// The store in `--store` or `STRATA_STORE`, under the key in `STRATA_KEY_FILE` if set.
struct AidStore: ParsableArguments {
    @Option var store: String?

    func open() async throws -> EventStore {
        let env = ProcessInfo.processInfo.environment
        let path = store ?? env["STRATA_STORE"] ?? ""
        guard !path.isEmpty else { throw ValidationError("give --store PATH or set STRATA_STORE") }
        let key = env["STRATA_KEY_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        return try await StoreAccess(path: path, keyFile: key, durability: env["STRATA_DURABILITY"]).openStore()
    }
}

/// Prints an error as `Error: …` on stderr and exits 1.
func reporting(_ body: () async throws -> Void) async throws {
    do { try await body() } catch {
        FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
        throw ExitCode.failure
    }
}

/// Appends synthetic document events in a loop: the child process of crash and concurrency tests.
struct AppendLoopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append-loop", abstract: "Append synthetic events in batches.")

    @OptionGroup var location: AidStore
    @Option var count = 1_000
    @Option var batch = 10
    @Option var stream = "loop"
    @Option var keys = 50
    @Option(help: "Prefix of the deterministic ids; a re-run with the same prefix skips what is stored.") var idPrefix = "loop"
    @Option var seed: UInt64 = 1

    func run() async throws {
        try await reporting {
            let store = try await location.open()
            var rng = SplitMix64(seed: seed)
            var i = 0
            while i < count {
                var events: [NewEvent] = []
                for _ in 0..<min(batch, count - i) {
                    let key = "k\(rng.next() % UInt64(keys))"
                    let doc = "{\"n\":\(rng.next() % 5),\"i\":\(i % 7),\"name\":\"item \(key)\"}"
                    events.append(
                        NewEvent(
                            id: "\(idPrefix)-\(i)", type: DocumentEvents.recorded, stream: stream,
                            metadata: [("collection", stream), ("key", key)], payload: Array(doc.utf8)))
                    i += 1
                }
                _ = try await store.append(events)
            }
            print("appended through \(try await store.head().seq)")
        }
    }
}

/// Opens the store, holds a read snapshot and sleeps: the child of the stale-reader test.
struct HoldReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hold-read", abstract: "Hold a read transaction.")

    @OptionGroup var location: AidStore
    @Option var seconds: Double = 60

    func run() async throws {
        try await reporting {
            let store = try await location.open()
            let seconds = self.seconds
            _ = try await store.read { _ in
                FileHandle.standardOutput.write(Data("holding\n".utf8))
                Thread.sleep(forTimeInterval: seconds)
                return 0
            }
        }
    }
}
