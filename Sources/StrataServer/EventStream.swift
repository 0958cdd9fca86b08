import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StrataDomain
import StrataJSON
import StrataPresentation

/// `GET /_strata/events?since=SEQ`: the log as Server-Sent Events, live. Each event is
/// `id: SEQ`, `event: TYPE` and `data:` its JSON (the `/_strata/log` shape); a reconnecting
/// client's `Last-Event-ID` resumes after it. Without `since`, from the head. New events are
/// looked for every `pollInterval` (one small read); a comment line every 15 s keeps proxies
/// from closing an idle stream.
extension StrataServer {
    func addEventRoutes(to router: Router<BasicRequestContext>) {
        router.get("/_strata/events") { request, _ in
            let since: UInt64
            do {
                if let last = request.headers[HTTPField.Name("Last-Event-ID")!], let seq = UInt64(last) {
                    since = seq
                } else if let text = request.uri.queryParameters.get("since") {
                    guard let seq = UInt64(text) else { return Self.error(.badRequest, "bad request", "since=\(text) must be a seq") }
                    since = seq
                } else {
                    since = try await self.useCases.replay.resolve(.now)
                }
            } catch { return Self.error(error) }
            let replay = self.useCases.replay, interval = self.configuration.pollInterval
            return Response(
                status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in
                    var next = since + 1
                    var quiet = Duration.zero
                    try await writer.write(ByteBuffer(string: ": strata events after seq \(since)\n\n"))
                    while !Task.isCancelled {
                        let entries = try await replay(LogQuery(fromSeq: next, limit: 500, newestFirst: false))
                        for e in entries {
                            next = e.seq + 1
                            guard self.allowsStream(e.stream) else { continue }
                            try await writer.write(ByteBuffer(string: "id: \(e.seq)\nevent: \(e.type)\ndata: \(JSONValue(entry: e).canonicalString)\n\n"))
                        }
                        if entries.isEmpty {
                            try await Task.sleep(for: interval)
                            quiet += interval
                            if quiet >= .seconds(15) { try await writer.write(ByteBuffer(string: ": still here\n\n")); quiet = .zero }
                        } else {
                            quiet = .zero
                        }
                    }
                    try await writer.finish(nil)
                })
        }
    }
}
