import Foundation
import Logging
import StrataApp
import StrataDomain
import StrataJSON
import StrataServer

/// `strata bench ui`: the web UI's pages of an existing store, asked of the real server (started
/// in this process on 127.0.0.1, an ephemeral port) through the app's HTTP client, one request
/// at a time. The pages are found as a person finds them, by following links: the sources page,
/// and for each source its items page, its changes page and the first item shown. Each page is
/// asked once to warm the caches, then `requests` times; the figures are the client's whole
/// exchange times (loopback, no process start), as curl's `time_total` in `make bench-ui`.
struct UIBenchmark {
    var location: StoreLocation
    var requests: Int
    /// More paths to ask besides the ones found (`/_strata/ui/…`).
    var extraPages: [String]
    /// How many sources' pages to ask (the first ones listed).
    var sources = 5

    func run() async throws -> [String: JSONValue] {
        let app = try await location.app()
        // The server is stopped by cancelling it, which it would log as an error.
        var logger = location.logger()
        logger.logLevel = .critical
        let configuration = ServeCommand.configuration(host: "127.0.0.1", port: 0, asOf: nil, sources: [], logger: logger, app: app)
        let server = StrataServer(useCases: StrataServer.UseCases(app.useCases), configuration: configuration)
        let (bound, announce) = AsyncStream.makeStream(of: Int.self)
        let serving = Task { try await server.run(stopOnSignals: false) { port in announce.yield(port) } }
        defer { serving.cancel() }
        var ports = bound.makeAsyncIterator()
        guard let port = await ports.next(), port > 0 else { throw CLIError("the server did not start on 127.0.0.1") }
        let base = "http://127.0.0.1:\(port)"

        func get(_ path: String) async throws -> (micros: Int64, body: [UInt8]) {
            let exchange = await app.upstream.forward(
                ForwardRequest(method: "GET", target: path, headers: [], body: nil, timeout: 60), to: base, startedAt: Date())
            switch exchange.outcome {
            case .response(let status, _, _, let body) where status == 200: return (exchange.totalMicros, body ?? [])
            case .response(let status, _, _, _): throw CLIError("\(path) answered HTTP \(status)")
            case .failure(let code, let message): throw CLIError("\(path) failed (\(code)): \(message)")
            }
        }
        func links(_ html: [UInt8], under prefix: String) -> [String] {
            let text = String(decoding: html, as: UTF8.self)
            var out: [String] = []
            for match in text.matches(of: /href="([^"?#]+)"/) {
                let link = String(match.1)
                if link.hasPrefix(prefix), link.count > prefix.count, !out.contains(link) { out.append(link) }
            }
            return out
        }

        var pages = ["/_strata/ui/"]
        let index = try await get("/_strata/ui/").body
        for sourcePage in links(index, under: "/_strata/ui/sources/").filter({ !$0.dropFirst(20).contains("/") }).prefix(sources) {
            pages.append(sourcePage)
            pages.append(sourcePage + "/changes")
            if let item = links(try await get(sourcePage).body, under: sourcePage + "/items/").first(where: { !$0.hasSuffix("/image") }) {
                pages.append(item)
            }
        }
        pages += extraPages
        var result: [String: JSONValue] = ["requests per page": .int(requests), "store": .string(location.path)]
        for page in pages {
            var times: [Int64] = []
            let bytes = try await get(page).body.count
            for _ in 0..<requests { times.append(try await get(page).micros) }
            times.sort()
            let p50 = Double(times[times.count / 2]) / 1000, p99 = Double(times[min(times.count - 1, times.count * 99 / 100)]) / 1000
            result["page \(page)"] = .string(String(format: "p50 %.2f ms · p99 %.2f ms · %d bytes", p50, p99, bytes))
        }
        return result
    }
}
