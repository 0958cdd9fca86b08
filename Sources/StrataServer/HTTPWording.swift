import StrataDomain
package import StrataPresentation

extension FilterInputNames {
    /// The HTTP API's query parameters.
    package static let queryParameters = FilterInputNames(
        where_: "where", sort: "sort=", limit: "limit=", offset: "offset=", asOf: "as_of", from: "from", to: "to", quoting: { "\($0)=\($1)" })
}

extension FrontEndWording {
    /// The HTTP API's words: its query parameters, a source's fields by the definition's keys,
    /// and the way out as a route of this API where there is one (a client cannot run commands).
    package static let http = FrontEndWording(
        inputs: .queryParameters, field: \.rawValue,
        next: { step in
            switch step {
            case .listSources, .defineSource: "see /_strata/sources"
            case .listItems(let source): "see /_strata/sources/\(source)/items"
            case .readLog, .readRecorded: "see /_strata/log"
            case .showDiff(let source, let from, let to): "see /_strata/sources/\(source)/diff?from=\(from)&to=\(to)"
            default: nil
            }
        })
}
