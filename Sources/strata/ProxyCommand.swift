import ArgumentParser
import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataJSON
import StrataServer

/// `strata proxy`: a recording reverse proxy in front of an API.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Put a recording reverse proxy in front of an API: every exchange a client makes is recorded.",
        discussion: reflowed(
            """
            Point any client at the proxy instead of the API: each request (any method) is forwarded
            to --upstream, answered with what came back, and recorded as an ExchangeRecorded event
            of NAME, a recorded source made on first use. The values of Authorization, Cookie,
            Set-Cookie, Proxy-Authorization, X-Api-Key and every --redact-header are stored as a
            keyed digest, never in plain text. An upstream that does not answer is recorded as an
            ExchangeFailed event and answered 502 with a JSON reason. TLS to the upstream is verified.

            `strata serve` replays what was recorded, by method, path, query and body digest, at any
            point; `strata export NAME --har FILE` or `--warc FILE` writes it out.

            Examples:
              strata proxy shop --upstream https://api.example.com --port 8080
              curl -H 'Authorization: Bearer $TOKEN' localhost:8080/v1/me
              strata serve --source shop --port 8081
            """)
    )
    @OptionGroup var location: StoreLocation
    @Argument(help: "The recorded source to record into (made on first use).") var name: String
    @Option(help: ArgumentHelp("The API's base URL (http or https).", valueName: "url")) var upstream: String
    @Option(help: "The address to listen on (loopback unless told otherwise).") var host = "127.0.0.1"
    @Option(help: "The port (0 picks a free one, printed on the first line).") var port = 8080
    @Option(help: ArgumentHelp("Another header whose value is kept out of the log (repeatable).", valueName: "name"))
    var redactHeader: [String] = []
    @Option(help: "Seconds an upstream exchange may take.") var timeout: Double = 60

    func validate() throws {
        try Self.validateUpstream(upstream)
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard !host.isEmpty else { throw ValidationError("--host must name an address, e.g. 127.0.0.1") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
        for h in redactHeader where !HeaderName.isValid(h) {
            throw ValidationError("--redact-header takes a header name like X-Session, got '\(h)'")
        }
    }

    static func validateUpstream(_ upstream: String) throws {
        guard let u = URL(string: upstream), let scheme = u.scheme?.lowercased(), ["http", "https"].contains(scheme), u.host != nil else {
            throw ValidationError("--upstream must be an absolute http or https URL, e.g. https://api.example.com")
        }
        guard u.query == nil, u.fragment == nil else { throw ValidationError("--upstream is a base URL: no query or fragment") }
    }

    func run() async throws {
        try await reportingErrors {
            let app = try await location.app { $0.requestsSoon = true }
            let recorder = try await useCase {
                try await app.useCases.recordTraffic.start(source: name, upstream: upstream, redacting: redactHeader, timeout: timeout)
            }
            if !StrataServer.isLoopback(host) {
                warn("Warning: listening on \(host): anyone who can reach it can use \(upstream) through it, and what they send is recorded.")
            }
            var logger = location.logger()
            logger.logLevel = location.verbose ? .debug : .warning
            let proxy = TrafficProxy(recorder: recorder, configuration: TrafficProxy.Configuration(host: host, port: port, logger: logger))
            let shown = host.contains(":") ? "[\(host)]" : host
            let banner = "recording \(name): http://\(shown):PORT → \(upstream); Ctrl-C stops"
            try await proxy.run(stopOnSignals: true) { bound in
                emit(banner.replacingOccurrences(of: "PORT", with: String(bound)))
            }
            let recorded = await recorder.recorded
            let failures = await recorder.failures
            for f in failures { warn("Error: \(f)") }
            emit("\(name): \(recorded) exchange\(recorded == 1 ? "" : "s") recorded")
            if !failures.isEmpty { throw ExitCode.failure }
        }
    }
}
