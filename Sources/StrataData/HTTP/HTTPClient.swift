import Foundation

/// An HTTP request to perform: a GET unless `method` says otherwise.
public struct HTTPRequest: Sendable, Hashable {
    public var url: String
    /// GET, POST, PATCH, PUT or DELETE.
    public var method: String
    /// The request body (sent with a `Content-Type` given in `headers`).
    public var body: [UInt8]?
    /// Header lines already resolved (secrets included): never log or store these.
    public var headers: [(name: String, value: String)]
    /// Total time allowed, seconds.
    public var timeout: Double
    public var maxBytes: Int
    /// Allow `file://` (only for sources whose own URL is a file URL).
    public var allowFileScheme: Bool
    /// Forward as a proxy does: no redirect followed, the body as sent (no content decoding,
    /// no `Accept-Encoding` or `User-Agent` of Strata's), and every response header kept in
    /// order in ``HTTPResponse/headerLines``.
    public var passThrough = false

    public init(
        url: String, method: String = "GET", body: [UInt8]? = nil, headers: [(name: String, value: String)] = [], timeout: Double = 30,
        maxBytes: Int = 64 << 20, allowFileScheme: Bool = false
    ) {
        self.url = url
        self.method = method
        self.body = body
        self.headers = headers
        self.timeout = timeout
        self.maxBytes = maxBytes
        self.allowFileScheme = allowFileScheme
    }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.url == b.url && a.method == b.method && a.body == b.body && a.timeout == b.timeout && a.maxBytes == b.maxBytes
            && a.allowFileScheme == b.allowFileScheme && a.passThrough == b.passThrough
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    public func hash(into h: inout Hasher) { h.combine(url) }
}

/// A completed exchange (any status).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// The URL after redirects.
    public var url: String
    public var body: [UInt8]
    /// The response headers Strata uses, lower-cased names: etag, last-modified, retry-after,
    /// cache-control, age,
    /// content-type, link, location.
    public var headers: [String: String]
    public var duration: Duration
    /// A pass-through request's response headers, every one in the order it came (names as sent).
    public var headerLines: [(name: String, value: String)] = []
    /// How long until the first byte of the response arrived (nil when not measured).
    public var waited: Duration?

    public init(status: Int, url: String, body: [UInt8], headers: [String: String], duration: Duration) {
        self.status = status
        self.url = url
        self.body = body
        self.headers = headers
        self.duration = duration
    }
}

/// Performs HTTP requests without blocking the caller.
public protocol HTTPClient: Sendable {
    /// Performs `request`. Returns any HTTP status; throws ``FetchError`` only when no complete
    /// response arrived (connection, timeout, TLS, too large, truncated, redirect loop).
    func send(_ request: HTTPRequest) async throws -> HTTPResponse

    /// Starts `requests`, at most `concurrency` in flight, each finished one replaced by the next
    /// at once; the completions are read from the returned batch (see ``HTTPTransfers``).
    func transfers(_ requests: [HTTPRequest], concurrency: Int) -> HTTPTransfers
}

/// The one error of the fetch path: what went wrong, where, and what it is about.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Hashable, Sendable {
            case connection, timeout, tls, tooLarge, truncated, redirects, http, invalidURL, malformedJSON,
                itemsPath, wrongType, duplicateIds, missingId, source, other
        }
        fileprivate let base: Base
        public static let connection = Code(base: .connection)
        public static let timeout = Code(base: .timeout)
        public static let tls = Code(base: .tls)
        public static let tooLarge = Code(base: .tooLarge)
        public static let truncated = Code(base: .truncated)
        public static let redirects = Code(base: .redirects)
        public static let http = Code(base: .http)
        public static let invalidURL = Code(base: .invalidURL)
        public static let malformedJSON = Code(base: .malformedJSON)
        public static let itemsPath = Code(base: .itemsPath)
        public static let wrongType = Code(base: .wrongType)
        public static let duplicateIds = Code(base: .duplicateIds)
        public static let missingId = Code(base: .missingId)
        public static let source = Code(base: .source)
        public static let other = Code(base: .other)
        public var description: String { base.rawValue }

        /// Worth another attempt: connection trouble, a timeout, a cut body, 429 or 5xx.
        public var isTransient: Bool { [.connection, .timeout, .truncated].contains(base) }
    }

    public var code: Code
    public var message: String
    public var url: String
    public var status: Int?
    /// Seconds the server asked us to wait (429/503 `Retry-After`).
    public var retryAfter: Double?
    /// What the error is about, for the layers above to word a way out.
    public var subject: Subject?
    /// Set once a `FetchFailed` event for this error is in the log.
    var recorded = false

    /// What a fetch error is about, in the definition's terms.
    public enum Subject: Sendable, Hashable {
        /// The definition's field (by its key) that the API's answer does not fit.
        case field(String)
        /// A header's kept secret is missing from the store.
        case keptSecret(header: String)
        /// The item is not stored yet: the list must be fetched first.
        case notFetchedYet
        /// The API refused the credentials the definition sends.
        case credentials
    }

    public init(code: Code, message: String, url: String, status: Int? = nil, retryAfter: Double? = nil, subject: Subject? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.status = status
        self.retryAfter = retryAfter
        self.subject = subject
    }

    public var description: String { "\(message) (\(url))" }

    /// Whether a retry may succeed.
    public var isRetryable: Bool {
        if code.isTransient { return true }
        if code == .http, let status { return status == 429 || status >= 500 }
        return false
    }
}
