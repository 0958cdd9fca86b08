import Foundation
import StrataData
import StrataTestSupport
import TestScratch
import Testing

/// TLS verification is on by default: a self-signed server is refused, and only the explicit,
/// loudly named opt-out accepts it. Uses Debian's `openssl s_server` on 127.0.0.1.
@Suite struct TLSTests {
    @Test func selfSignedCertificatesAreRefusedUnlessVerificationIsExplicitlyOff() async throws {
        let dir = TestScratch.path("tls")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gen = try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/k.pem",
                "-out", dir + "/c.pem", "-days", "1", "-subj", "/CN=127.0.0.1"
            ])
        gen.waitUntilExit()
        #expect(gen.terminationStatus == 0)
        let port = try freeLoopbackPort()
        let server = try run(
            "/usr/bin/openssl",
            [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", dir + "/c.pem",
                "-key", dir + "/k.pem", "-www", "-quiet"
            ])
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        let url = "https://127.0.0.1:\(port)/"
        // Wait until it accepts connections.
        let insecure = CurlHTTPClient(
            configuration: {
                var c = CurlHTTPClient.Configuration(); c.insecureSkipTLSVerify = true; return c
            }())
        var up = false
        for _ in 0..<50 where !up {
            if (try? await insecure.send(HTTPRequest(url: url, timeout: 1))) != nil { up = true } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(up, "openssl s_server did not start on port \(port)")
        await #expect { _ = try await CurlHTTPClient().send(HTTPRequest(url: url, timeout: 5)) } throws: { error in
            guard let e = error as? FetchError else { return false }
            return e.code == .tls && e.message.contains("not trusted")
        }
        let r = try await insecure.send(HTTPRequest(url: url, timeout: 5))
        #expect(r.status == 200)
    }

    private func run(_ path: String, _ args: [String]) throws -> Spawned {
        try Spawned(executable: path, arguments: args, environment: ProcessInfo.processInfo.environment, stdin: nil, stdout: nil, stderr: nil)
    }
}
