import ChildProcess
import Foundation
import Testing

/// The one runner every child process goes through, with real children (`/bin/sh`, `cat`,
/// `sleep`): exit codes and signals, input from a file, output kept up to a limit, timeouts, a
/// conversation ended early, and a program that is not there.
@Suite struct ChildProcessRunnerTests {
    let runner = ChildProcessRunner()

    @Test func exitCodesSignalsAndTheEnvironmentReachTheCaller() async throws {
        let ok = try await runner.collect(.shell("test \"$STRATA_URL\" = http://x && echo \"$1\""), arguments: ["one"], environment: ["STRATA_URL": "http://x"])
        #expect(ok.exit == .exited(0) && String(decoding: ok.output, as: UTF8.self) == "one\n")
        let failed = try await runner.collect(.shell("echo boom >&2; exit 3"))
        #expect(failed.exit == .exited(3) && failed.exit.status == 3 && failed.errorText == "boom" && !failed.exit.succeeded)
        let killed = try await runner.collect(.shell("kill -9 $$"))
        #expect(killed.exit == .signaled(9) && killed.exit.status == 137)
    }

    /// Input comes from a file: a child that exits without reading it is no error (with a pipe,
    /// swift-subprocess 1.0.2 traps on the half-done write).
    @Test func inputIsReadOrLeftUnread() async throws {
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        let echoed = try await runner.collect(.name("cat"), input: big)
        #expect(echoed.exit.succeeded && echoed.output == big)
        for _ in 0..<50 {
            let ignored = try await runner.collect(.name("true"), input: big, outputLimit: 0)
            #expect(ignored.exit.succeeded)
        }
    }

    /// Output past the limit is read and dropped: the child is never blocked on a full pipe.
    @Test func outputIsKeptUpToItsLimit() async throws {
        let r = try await runner.collect(.shell("head -c 3000000 /dev/zero; head -c 200000 /dev/zero >&2"), outputLimit: 10, errorLimit: 5)
        #expect(r.exit.succeeded && r.output.count == 10 && r.errorOutput.count == 5)
    }

    @Test func aChildPastItsTimeIsStopped() async throws {
        // Stopped long before the child would have ended by itself (the bound is loose: the
        // suite runs every test at once on two cores).
        let started = ContinuousClock.now
        let exit = try await runner.interactive(.name("sleep"), arguments: ["300"], timeout: .milliseconds(300))
        #expect(exit == .timedOut && exit.status == 143)
        #expect(ContinuousClock.now - started < .seconds(200))
        let collected = try await runner.collect(.shell("sleep 300"), timeout: .milliseconds(300))
        #expect(collected.exit == .timedOut)
    }

    @Test func aConversationReadsAsItComesAndEndsTheChildEarly() async throws {
        let (line, exit, _) = try await runner.stream(.shell("echo ready; read x; echo \"got $x\"; sleep 30"), input: Array("hello\n".utf8)) { output in
            var bytes: [UInt8] = []
            try await output.read { chunk in
                bytes += chunk
                return !String(decoding: bytes, as: UTF8.self).contains("got")
            }
            output.terminate()
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(line == "ready\ngot hello\n" && exit == .signaled(SIGTERM))
    }

    @Test func aProgramThatIsNotThereSaysSo() async throws {
        await #expect(throws: ChildProcessRunner.StartError.self) {
            _ = try await runner.collect(.name("strata-no-such-program"))
        }
        await #expect(throws: ChildProcessRunner.StartError.self) {
            _ = try await runner.interactive(.path("/nonexistent/program"))
        }
        #expect(ChildProcessRunner.Program.command("./check.sh") == .path("./check.sh") && ChildProcessRunner.Program.command("sh") == .name("sh"))
    }
}
