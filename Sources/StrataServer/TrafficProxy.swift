import Foundation
import HTTPTypes
import Hummingbird
package import Logging
import NIOCore
package import StrataDomain
import StrataJSON
import UnixSignals

/// `strata proxy`: a reverse proxy that answers each request with what the upstream answered and
/// records the exchange (through ``TrafficRecorder``). Any method; HTTP/1.1 keep-alive; many
/// clients at once. An upstream that fails is answered 502 with a JSON reason, and the failure
/// is recorded too.
package final class TrafficProxy: Sendable {
    package struct Configuration: Sendable {
        package var host: String
        /// 0 picks a free port.
        package var port: Int
        /// The largest request body taken (larger ones are answered 413 and not forwarded).
        package var maxRequestBytes: Int
        package var logger: Logger

        package init(host: String = "127.0.0.1", port: Int = 8080, maxRequestBytes: Int = 64 << 20, logger: Logger = Logger(label: "strata.proxy")) {
            self.host = host
            self.port = port
            self.maxRequestBytes = maxRequestBytes
            self.logger = logger
        }
    }

    let recorder: TrafficRecorder
    let configuration: Configuration

    package init(recorder: TrafficRecorder, configuration: Configuration) {
        self.recorder = recorder
        self.configuration = configuration
    }

    /// Runs until the task is cancelled, or SIGTERM or SIGINT arrives when `stopOnSignals`; every
    /// exchange queued by then is in the log when it returns.
    package func run(stopOnSignals: Bool = false, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let recorder = self.recorder
        let limit = configuration.maxRequestBytes
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            await Self.relay(request, limit: limit) { await recorder.forward($0) }
        }
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: configuration.logger
        )
        let signals: [UnixSignal] = stopOnSignals ? [.sigterm, .sigint] : []
        do {
            try await app.runService(gracefulShutdownSignals: signals)
        } catch {
            await recorder.flush()
            throw error
        }
        await recorder.flush()
    }

    /// Forwards one request through `forward` and answers with what came back.
    static func relay(_ request: Request, limit: Int, forward: (ForwardRequest) async -> Exchange) async -> Response {
        var body: [UInt8]?
        do {
            let buffer = try await request.body.collect(upTo: limit)
            if buffer.readableBytes > 0 { body = [UInt8](buffer: buffer) }
        } catch {
            return StrataServer.error(.contentTooLarge, "request too large", "the request body is larger than \(limit) bytes; the proxy does not forward it")
        }
        let headers = request.headers.map { HeaderField($0.name.rawName, $0.value) }
        let forwarded = ForwardRequest(method: request.method.rawValue, target: request.uri.description, headers: headers, body: body)
        return answer(await forward(forwarded), head: request.method == .head)
    }

    /// The client's answer to an exchange: the upstream's status, headers and body, or 502.
    static func answer(_ x: Exchange, head: Bool) -> Response {
        switch x.outcome {
        case let .response(status, _, headers, body):
            return StrataServer.replayed(status: status, headers: headers, body: body ?? [], head: head, extra: HTTPFields())
        case let .failure(code, message):
            return StrataServer.error(
                .badGateway, "upstream failed", "the upstream did not answer \(x.method) \(x.url): \(message)",
                extra: ["code": .string(code), "url": .string(x.url), "recorded": .bool(true)])
        }
    }
}

extension StrataServer {
    /// Headers that belong to one connection, and those the server sets itself.
    static let notRelayed: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "date"
    ]

    /// A recorded or relayed answer: its status and headers as they came (less the connection's
    /// own), `extra` first, and the body (none for HEAD, 204 and 304).
    static func replayed(status: Int, headers: [HeaderField], body: [UInt8], head: Bool, extra: HTTPFields) -> Response {
        var h = extra
        for f in headers where !notRelayed.contains(f.name.lowercased()) {
            guard let name = HTTPField.Name(f.name) else { continue }
            h.append(HTTPField(name: name, value: f.value))
        }
        let bodiless = head || status == 204 || status == 304 || (100..<200).contains(status)
        if !(status == 204 || status == 304 || (100..<200).contains(status)) {
            h[.contentLength] = String(head ? Int(headers.value("Content-Length") ?? "") ?? body.count : body.count)
        }
        return Response(
            status: HTTPResponse.Status(code: status), headers: h, body: bodiless ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
