import Foundation

/// A HAR 1.2 file (the W3C draft's `log` object), as devtools, mitmproxy and Charles write it.
/// Fields a writer may leave out are optional; the underscore-prefixed custom fields tools add
/// are ignored.
public struct HARDto: Codable, Sendable {
    public var log: Log

    public struct Log: Codable, Sendable {
        public var version: String?
        public var creator: Creator?
        public var pages: [Page]?
        public var entries: [Entry]
        public var comment: String?
    }

    public struct Creator: Codable, Sendable {
        public var name: String
        public var version: String
    }

    public struct Page: Codable, Sendable {
        public var startedDateTime: String?
        public var id: String?
        public var title: String?
    }

    public struct NameValue: Codable, Sendable, Hashable {
        public var name: String
        public var value: String
    }

    public struct Entry: Codable, Sendable {
        public var pageref: String?
        public var startedDateTime: String
        public var time: Double?
        public var request: Request
        public var response: Response
        public var timings: Timings?
        public var serverIPAddress: String?
        public var comment: String?
        /// Chromium's reason for an entry with no response (status 0).
        public var _error: String?
        public var cache: EmptyObject?
    }

    public struct EmptyObject: Codable, Sendable {}

    public struct Request: Codable, Sendable {
        public var method: String
        public var url: String
        public var httpVersion: String?
        public var cookies: [NameValue]?
        public var headers: [NameValue]?
        public var queryString: [NameValue]?
        public var postData: PostData?
        public var headersSize: Int?
        public var bodySize: Int?
    }

    public struct PostData: Codable, Sendable {
        public var mimeType: String?
        public var text: String?
        /// Not in HAR 1.2, but written by some tools for binary request bodies.
        public var encoding: String?
    }

    public struct Response: Codable, Sendable {
        public var status: Int
        public var statusText: String?
        public var httpVersion: String?
        public var cookies: [NameValue]?
        public var headers: [NameValue]?
        public var content: Content?
        public var redirectURL: String?
        public var headersSize: Int?
        public var bodySize: Int?
    }

    public struct Content: Codable, Sendable {
        public var size: Int?
        public var compression: Int?
        public var mimeType: String?
        public var text: String?
        public var encoding: String?
    }

    public struct Timings: Codable, Sendable {
        public var blocked: Double?
        public var dns: Double?
        public var connect: Double?
        public var send: Double?
        public var wait: Double?
        public var receive: Double?
        public var ssl: Double?
    }
}

/// HAR entries to exchanges and back.
public enum HARMapping {
    /// Headers a HAR's decoded body no longer matches: the body is stored as the HAR gives it.
    static let bodyFraming: Set<String> = ["content-encoding", "content-length", "transfer-encoding"]

    /// The exchange of `entry` (number `index` in its file) for `source`; throws for an entry
    /// without a usable date or URL.
    public static func exchange(_ e: HARDto.Entry, index: Int, source: String) throws(FetchError) -> ExchangeEntity {
        guard let started = ExactTime.parse(e.startedDateTime) else {
            throw FetchError(
                code: .malformedJSON, message: "entry \(index + 1): startedDateTime '\(e.startedDateTime)' is not an ISO 8601 date-time", url: e.request.url)
        }
        guard let (_, target) = RecordingIndex.split(e.request.url), target.hasPrefix("/") else {
            throw FetchError(code: .invalidURL, message: "entry \(index + 1): '\(e.request.url)' is not an absolute http(s) URL", url: e.request.url)
        }
        _ = target
        let requestHeaders = (e.request.headers ?? []).filter { !$0.name.hasPrefix(":") }.map { HeaderLine($0.name, $0.value) }
        var requestBody: [UInt8]?
        if let post = e.request.postData, let text = post.text {
            requestBody = post.encoding == "base64" ? Data(base64Encoded: text).map { [UInt8]($0) } : Array(text.utf8)
        }
        let total = Int64(((e.time ?? 0) * 1000).rounded())
        let wait = e.timings?.wait.flatMap { $0 >= 0 ? Int64(($0 * 1000).rounded()) : nil }
        let outcome: ExchangeEntity.Outcome
        if e.response.status <= 0 {
            outcome = .failure(code: "connection", message: e._error ?? "no response (status 0 in the HAR)")
        } else {
            var body: [UInt8]?
            if let c = e.response.content, let text = c.text {
                if c.encoding == "base64" {
                    guard let d = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                        throw FetchError(code: .malformedJSON, message: "entry \(index + 1): content.text is not valid base64", url: e.request.url)
                    }
                    body = [UInt8](d)
                } else {
                    body = Array(text.utf8)
                }
            }
            let headers = (e.response.headers ?? []).filter { !$0.name.hasPrefix(":") && !bodyFraming.contains($0.name.lowercased()) }
                .map { HeaderLine($0.name, $0.value) }
            outcome = .response(status: e.response.status, statusText: e.response.statusText, headers: headers, body: body)
        }
        let version = e.request.httpVersion.flatMap { $0.isEmpty ? nil : $0 } ?? "HTTP/1.1"
        return ExchangeEntity(
            source: source, method: e.request.method.uppercased(), url: e.request.url, httpVersion: version, requestHeaders: requestHeaders,
            requestBody: requestBody, startedAt: started, outcome: outcome, waitMicros: wait, totalMicros: max(0, total), origin: "har")
    }

    /// The HAR entry of `x`.
    public static func entry(_ x: ExchangeEntity) -> HARDto.Entry {
        let ms = { (us: Int64) in Double(us) / 1000 }
        var query: [HARDto.NameValue] = []
        if let q = URLComponents(string: x.url)?.queryItems { query = q.map { HARDto.NameValue(name: $0.name, value: $0.value ?? "") } }
        var post: HARDto.PostData?
        if let body = x.requestBody {
            let mime = HeaderLine.value("Content-Type", in: x.requestHeaders) ?? "application/octet-stream"
            if let text = String(validating: body, as: UTF8.self) {
                post = HARDto.PostData(mimeType: mime, text: text, encoding: nil)
            } else {
                post = HARDto.PostData(mimeType: mime, text: Data(body).base64EncodedString(), encoding: "base64")
            }
        }
        let request = HARDto.Request(
            method: x.method, url: x.url, httpVersion: x.httpVersion, cookies: [], headers: x.requestHeaders.map { .init(name: $0.name, value: $0.value) },
            queryString: query, postData: post, headersSize: -1, bodySize: x.requestBody?.count ?? 0)
        let response: HARDto.Response
        var error: String?
        switch x.outcome {
        case let .response(status, statusText, headers, body):
            var content = HARDto.Content(
                size: body?.count ?? 0, compression: nil, mimeType: HeaderLine.value("Content-Type", in: headers) ?? "", text: nil, encoding: nil)
            if var body {
                if let ce = HeaderLine.value("Content-Encoding", in: headers)?.lowercased(), ce == "gzip" || ce == "deflate",
                    let plain = try? ContentDecoding.gunzip(body, limit: .max)
                {
                    content.compression = plain.count - body.count
                    body = plain
                    content.size = plain.count
                }
                if let text = String(validating: body, as: UTF8.self) {
                    content.text = text
                } else {
                    content.text = Data(body).base64EncodedString()
                    content.encoding = "base64"
                }
            }
            response = HARDto.Response(
                status: status, statusText: statusText ?? HTTPStatusText.text(status), httpVersion: x.httpVersion, cookies: [],
                headers: headers.map { .init(name: $0.name, value: $0.value) }, content: content,
                redirectURL: HeaderLine.value("Location", in: headers) ?? "", headersSize: -1, bodySize: body?.count ?? 0)
        case let .failure(code, message):
            error = "\(code): \(message)"
            response = HARDto.Response(
                status: 0, statusText: "", httpVersion: "", cookies: [], headers: [], content: HARDto.Content(size: 0, mimeType: "x-unknown"),
                redirectURL: "", headersSize: -1, bodySize: -1)
        }
        let wait = x.waitMicros.map(ms) ?? ms(x.totalMicros)
        return HARDto.Entry(
            pageref: nil, startedDateTime: ExactTime.format(x.startedAt), time: ms(x.totalMicros), request: request, response: response,
            timings: HARDto.Timings(send: 0, wait: wait, receive: max(0, ms(x.totalMicros) - wait)), serverIPAddress: nil, comment: nil,
            _error: error, cache: HARDto.EmptyObject())
    }
}

/// The reason phrases of common statuses (RFC 9110), for records that kept none.
public enum HTTPStatusText {
    public static func text(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 410: "Gone"
        case 412: "Precondition Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}
