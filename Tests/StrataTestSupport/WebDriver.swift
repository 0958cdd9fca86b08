import Foundation

/// A headless Chromium driven through chromedriver's W3C WebDriver API (plain HTTP on loopback):
/// Debian's `chromium` and `chromium-driver`, as `make deps` installs them.
public final class WebDriver: @unchecked Sendable {
    let driver: Spawned
    let base: String
    public let session: String

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts chromedriver on a free port and a headless Chromium session in it.
    public static func start() async throws -> WebDriver {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
        else { throw Failure(description: "chromium and chromium-driver are not installed: run make deps") }
        let port = try freeLoopbackPort()
        let driver = try Spawned(
            executable: "/usr/bin/chromedriver", arguments: ["--port=\(port)"], environment: ProcessInfo.processInfo.environment, stdin: nil,
            stdout: nil, stderr: nil)
        let base = "http://127.0.0.1:\(port)"
        // Up once it answers its status.
        for _ in 0..<200 {
            if let r = try? await call(base, "GET", "/status"), (r["value"] as? [String: Any])?["ready"] as? Bool == true { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let caps: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "goog:chromeOptions": [
                        "binary": "/usr/bin/chromium",
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900", "--disable-dev-shm-usage"]
                    ],
                    "goog:loggingPrefs": ["browser": "ALL"]
                ]
            ]
        ]
        let r = try await call(base, "POST", "/session", caps)
        guard let value = r["value"] as? [String: Any], let id = value["sessionId"] as? String else {
            driver.terminate()
            throw Failure(description: "chromedriver did not start a session: \(r)")
        }
        return WebDriver(driver: driver, base: base, session: id)
    }

    init(driver: Spawned, base: String, session: String) {
        self.driver = driver; self.base = base; self.session = session
    }

    /// One WebDriver command through curl (chromedriver keeps its connections open; curl reads
    /// its answers by their length).
    static func call(_ base: String, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
        var args = ["-s", "--max-time", "60", "-X", method, "-H", "Content-Type: application/json"]
        // The body from a file: a script to inject (axe-core, 570 KB) is past what an argument may hold.
        var bodyFile: String?
        if let body {
            let file = NSTemporaryDirectory() + "webdriver-\(UUID().uuidString).json"
            try JSONSerialization.data(withJSONObject: body).write(to: URL(fileURLWithPath: file))
            bodyFile = file
            args += ["--data-binary", "@" + file]
        }
        defer { if let bodyFile { try? FileManager.default.removeItem(atPath: bodyFile) } }
        args.append(base + path)
        let out = Pipe()
        let curl = try Spawned(
            executable: "/usr/bin/curl", arguments: args, environment: ProcessInfo.processInfo.environment, stdin: nil, stdout: out, stderr: nil)
        let data = try await offPoolThread { () -> Data in
            try? out.fileHandleForWriting.close()
            let d = out.fileHandleForReading.readDataToEndOfFile()
            curl.waitUntilExit()
            return d
        }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @discardableResult
    public func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        let r = try await Self.call(base, method, "/session/\(session)" + path, body)
        if let v = r["value"] as? [String: Any], let error = v["error"] as? String {
            throw Failure(description: "\(method) \(path): \(error): \(v["message"] ?? "")")
        }
        return r["value"]
    }

    public func go(_ url: String) async throws { try await call("POST", "/url", ["url": url]) }

    /// Runs `script` in the page and returns its value.
    public func run(_ script: String, _ args: [Any] = []) async throws -> Any? { try await call("POST", "/execute/sync", ["script": script, "args": args]) }

    public func title() async throws -> String { try await run("return document.title") as? String ?? "" }

    /// The element matching a CSS selector (its WebDriver reference).
    public func element(_ css: String) async throws -> String {
        let v = try await call("POST", "/element", ["using": "css selector", "value": css]) as? [String: Any]
        guard let id = v?.values.first as? String else { throw Failure(description: "no element \(css)") }
        return id
    }

    public func click(_ css: String) async throws { try await call("POST", "/element/\(try await element(css))/click", [:]) }

    public func type(_ css: String, _ text: String) async throws {
        let el = try await element(css)
        try await call("POST", "/element/\(el)/clear", [:])
        try await call("POST", "/element/\(el)/value", ["text": text])
    }

    /// A script run as a promise: it calls its last argument with the result.
    public func runAsync(_ script: String, _ args: [Any] = []) async throws -> Any? {
        try await call("POST", "/execute/async", ["script": script, "args": args])
    }

    /// axe-core's script, as `make deps` put it in `.build/deps`.
    public static let axe: String? = {
        let path = URL(fileURLWithPath: fixturesRoot).deletingLastPathComponent().appendingPathComponent(".build/deps/axe.min.js").path
        return try? String(contentsOfFile: path, encoding: .utf8)
    }()

    /// The violations axe-core finds on the page with an impact of serious or critical, each
    /// as `rule: element, element`; axe is put into the page first.
    public func seriousAccessibilityProblems() async throws -> [String] {
        guard let axe = Self.axe else { throw Failure(description: "axe-core is missing from .build/deps: run 'make deps'") }
        _ = try await run(axe + "\n;return typeof axe")
        let found = try await runAsync(
            """
            const done = arguments[arguments.length - 1];
            axe.run(document, { resultTypes: ['violations'] })
              .then(r => done(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '))))
              .catch(e => done(['axe failed: ' + e]));
            """)
        return found as? [String] ?? ["axe answered \(String(describing: found))"]
    }

    /// A DevTools command (emulated media, device metrics).
    public func cdp(_ cmd: String, _ params: [String: Any]) async throws {
        _ = try await Self.call(base, "POST", "/session/\(session)/goog/cdp/execute", ["cmd": cmd, "params": params])
    }

    /// The browser console's messages at level SEVERE since the last call.
    public func severeLogs() async throws -> [String] {
        let r = try await Self.call(base, "POST", "/session/\(session)/se/log", ["type": "browser"])
        return ((r["value"] as? [[String: Any]]) ?? []).filter { ($0["level"] as? String) == "SEVERE" }.map { "\($0["message"] ?? "")" }
    }

    public func screenshot(to path: String) async throws {
        guard let b64 = try await call("GET", "/screenshot") as? String, let data = Data(base64Encoded: b64) else { return }
        try data.write(to: URL(fileURLWithPath: path))
    }

    public func quit() async {
        _ = try? await Self.call(base, "DELETE", "/session/\(session)")
        driver.terminate()
        _ = driver.waitUntilExit(seconds: 10)
    }
}
