public import EventStore
import Crypto
import Foundation

/// Exchanges to WARC records and WARC records to exchanges.
public enum WARCMapping {
    /// A stable record id: the same exchange exports to the same ids every time.
    static func recordID(_ seed: String) -> String {
        let h = Array(SHA256.hash(data: Array(seed.utf8)))
        var b = Array(h.prefix(16))
        b[6] = (b[6] & 0x0F) | 0x50  // a name-based UUID (version 5 layout)
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String(format: "%02x", $0) }.joined()
        let p = Array(hex)
        return "<urn:uuid:\(String(p[0..<8]))-\(String(p[8..<12]))-\(String(p[12..<16]))-\(String(p[16..<20]))-\(String(p[20..<32]))>"
    }

    /// The `warcinfo` record that opens an export.
    public static func warcinfo(file: String, software: String, source: String, through seq: UInt64, at date: Timestamp) -> WARCRecord {
        let block = Array(
            "software: \(software)\r\nformat: WARC File Format 1.1\r\nconformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\nsource: \(source)\r\nthrough-seq: \(seq)\r\n"
                .utf8)
        return WARCRecord(
            fields: [
                HeaderLine("WARC-Type", "warcinfo"), HeaderLine("WARC-Record-ID", recordID("warcinfo \(source) \(seq) \(file)")),
                HeaderLine("WARC-Date", ExactTime.formatSeconds(date)), HeaderLine("WARC-Filename", file),
                HeaderLine("Content-Type", "application/warc-fields")
            ], block: block)
    }

    /// The records of one exchange: its response (a `revisit` for a 304 without a body) and its
    /// request. An exchange that got no answer has no WARC form: empty.
    public static func records(_ x: ExchangeEntity, warcinfo: String) -> [WARCRecord] {
        guard case let .response(status, statusText, headers, body) = x.outcome else { return [] }
        let seed = x.id ?? "\(x.source) \(x.seq)"
        let responseID = recordID("response " + seed)
        let date = ExactTime.format(x.startedAt)
        var responseHeaders = headers.filter { !["content-length", "transfer-encoding", "connection", "keep-alive"].contains($0.name.lowercased()) }
        let payload = body ?? []
        if status != 304 && status != 204 && !(100..<200).contains(status) { responseHeaders.append(HeaderLine("Content-Length", String(payload.count))) }
        let text = statusText.flatMap { $0.isEmpty ? nil : $0 } ?? HTTPStatusText.text(status)
        let http = HTTPMessage(startLine: "HTTP/1.1 \(status) \(text)".trimmingCharacters(in: .whitespaces), headers: responseHeaders, body: payload).bytes
        var out: [WARCRecord] = []
        let revisit = body == nil && status == 304
        var fields = [
            HeaderLine("WARC-Type", revisit ? "revisit" : "response"), HeaderLine("WARC-Record-ID", responseID), HeaderLine("WARC-Date", date),
            HeaderLine("WARC-Target-URI", x.url), HeaderLine("WARC-Warcinfo-ID", warcinfo),
            HeaderLine("Content-Type", "application/http;msgtype=response"), HeaderLine("WARC-Block-Digest", WARCWriter.digest(http))
        ]
        if revisit {
            fields.append(HeaderLine("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/server-not-modified"))
        } else {
            fields.append(HeaderLine("WARC-Payload-Digest", WARCWriter.digest(payload)))
        }
        out.append(WARCRecord(fields: fields, block: http))
        let (host, target) = RecordingIndex.split(x.url) ?? ("", "/")
        var requestHeaders = [HeaderLine("Host", host)]
        requestHeaders += x.requestHeaders.filter {
            $0.name.caseInsensitiveCompare("Host") != .orderedSame && $0.name.caseInsensitiveCompare("Content-Length") != .orderedSame
        }
        if let b = x.requestBody { requestHeaders.append(HeaderLine("Content-Length", String(b.count))) }
        let request = HTTPMessage(startLine: "\(x.method) \(target) HTTP/1.1", headers: requestHeaders, body: x.requestBody ?? []).bytes
        out.append(
            WARCRecord(
                fields: [
                    HeaderLine("WARC-Type", "request"), HeaderLine("WARC-Record-ID", recordID("request " + seed)), HeaderLine("WARC-Date", date),
                    HeaderLine("WARC-Target-URI", x.url), HeaderLine("WARC-Warcinfo-ID", warcinfo), HeaderLine("WARC-Concurrent-To", responseID),
                    HeaderLine("Content-Type", "application/http;msgtype=request"), HeaderLine("WARC-Block-Digest", WARCWriter.digest(request))
                ], block: request))
        return out
    }

    /// The parts of an HTTP request record.
    public struct Request: Sendable {
        public var method: String
        public var headers: [HeaderLine]
        public var body: [UInt8]?
    }

    public static func request(_ r: WARCRecord) -> Request? {
        guard let m = HTTPMessage.parse(r.block) else { return nil }
        let method = m.startLine.split(separator: " ").first.map(String.init) ?? "GET"
        let headers = m.headers.filter { !["host", "content-length"].contains($0.name.lowercased()) }
        return Request(method: method.uppercased(), headers: headers, body: m.body.isEmpty ? nil : m.body)
    }

    /// The target URI of a record (`<…>` as WARC 1.0 drafts wrote it, unwrapped).
    public static func target(_ r: WARCRecord) -> String? {
        guard var t = r["WARC-Target-URI"] else { return nil }
        if t.hasPrefix("<") && t.hasSuffix(">") { t = String(t.dropFirst().dropLast()) }
        return t
    }

    /// The exchange of a `response` (or `revisit`) record, with its request when known. `body`
    /// replaces the record's payload (a revisit's, found by digest).
    public static func exchange(_ r: WARCRecord, request: Request?, source: String, payload: [UInt8]? = nil) -> ExchangeEntity? {
        guard let url = target(r), let date = r["WARC-Date"].flatMap(ExactTime.parse), let m = HTTPMessage.parse(r.block) else { return nil }
        let parts = m.startLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let version = String(parts[0])
        let text = parts.count > 2 ? String(parts[2]) : nil
        let headers = m.headers
        let body: [UInt8]? = r.type == "revisit" ? payload : m.body
        let id = r["WARC-Record-ID"].map { "warc-" + $0.trimmingCharacters(in: CharacterSet(charactersIn: "<>")) }
        return ExchangeEntity(
            id: id, source: source, method: request?.method ?? "GET", url: url, httpVersion: version.hasPrefix("HTTP/") ? version : "HTTP/1.1",
            requestHeaders: request?.headers ?? [], requestBody: request?.body, startedAt: date,
            outcome: .response(status: status, statusText: text, headers: headers, body: body), totalMicros: 0, origin: "warc")
    }
}
