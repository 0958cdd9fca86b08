import HTTPTypes
import Hummingbird

/// Every error answer as JSON: what the router answers itself (no route for a path or a method,
/// a body too large) comes as an `HTTPError` with no body, and a client deserves the same
/// `{"error", "message"}` as from a route.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError {
            let message: String
            switch e.status {
            case .notFound where request.method != .get && request.method != .head:
                message = "\(request.method) \(request.uri.path) is not served: this server is read-only (GET and HEAD), besides POST /_strata/sessions"
            case .notFound:
                message = "nothing is served at \(request.uri.path); see /_strata/sources"
            default:
                message = e.body ?? e.status.reasonPhrase
            }
            var response = StrataServer.error(e.status, e.status.reasonPhrase.lowercased(), message)
            for field in e.headers where field.name != .contentType && field.name != .contentLength { response.headers.append(field) }
            return response
        }
    }
}
