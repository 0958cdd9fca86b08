import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StrataDomain
import StrataJSON
import StrataPresentation

extension StrataServer {
    /// A JSON answer (pretty-printed, as the CLI prints it).
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: h, body: ResponseBody(byteBuffer: ByteBuffer(string: value.prettyString + "\n")))
    }

    /// An error as JSON: `{"error": kind, "message": what to do}`.
    static func error(_ status: HTTPResponse.Status, _ kind: String, _ message: String, extra: [String: JSONValue] = [:]) -> Response {
        var o = extra
        o["error"] = .string(kind)
        o["message"] = .string(message)
        return json(.object(o), status: status)
    }

    /// A use case's error as the status its kind means.
    static func error(_ error: any Error) -> Response {
        let e = PresentableError(error)
        let (status, kind) = Self.status(of: e.kind)
        return Self.error(status, kind, FrontEndWording.http.message(e))
    }

    /// The status a problem's kind means, and the word the JSON answer names it by.
    static func status(of kind: PresentableError.Kind) -> (HTTPResponse.Status, String) {
        switch kind {
        case .notFound: (.notFound, "not found")
        case .invalidInput: (.badRequest, "bad request")
        case .network: (.badGateway, "network")
        case .storage: (.internalServerError, "storage")
        case .conflict: (.conflict, "conflict")
        }
    }
}
