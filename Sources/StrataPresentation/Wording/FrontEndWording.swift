package import StrataDomain

/// How a front end names the inputs of a filter or a point in time, so that a problem with one
/// is worded in the front end's own terms: the CLI's `--where 'x'`, the server's `where=x`, the
/// browser's `filter 'x'`. Each front end defines its own.
package struct FilterInputNames: Sendable {
    package var where_: String
    package var sort: String
    package var limit: String
    package var offset: String
    package var asOf: String
    /// The two ends of a diff.
    package var from: String
    package var to: String
    /// An input with the value given for it.
    package var quoting: @Sendable (_ name: String, _ value: String) -> String

    package init(
        where_: String, sort: String, limit: String, offset: String, asOf: String, from: String, to: String,
        quoting: @escaping @Sendable (_ name: String, _ value: String) -> String
    ) {
        self.where_ = where_; self.sort = sort; self.limit = limit; self.offset = offset; self.asOf = asOf
        self.from = from; self.to = to; self.quoting = quoting
    }

    /// The terminal browser's prompts: its `/` filter and `s` sort.
    package static let browser = FilterInputNames(
        where_: "filter", sort: "sort", limit: "limit", offset: "offset", asOf: "time", from: "from", to: "to", quoting: { "\($0) '\($1)'" })
}

/// How a front end words what the layers below leave typed: the inputs it takes, a source's
/// fields, and the way out of a problem (``NextStep``). The CLI words them as flags and commands
/// to type; the HTTP API as its query parameters and the definition's keys.
package struct FrontEndWording: Sendable {
    package var inputs: FilterInputNames
    /// A source's field as this front end sets it.
    package var field: @Sendable (SourceSpec.Field) -> String
    /// The way out, as this front end offers it; nil when it offers none.
    package var next: @Sendable (NextStep) -> String?

    package init(
        inputs: FilterInputNames, field: @escaping @Sendable (SourceSpec.Field) -> String, next: @escaping @Sendable (NextStep) -> String?
    ) {
        self.inputs = inputs
        self.field = field
        self.next = next
    }

    /// `text`, then `; ` and the way out when this front end offers one.
    package func sentence(_ text: String, _ step: NextStep?) -> String {
        guard let step, let way = next(step) else { return text }
        return text + "; " + way
    }

    /// A problem as this front end says it.
    package func message(_ error: PresentableError) -> String {
        sentence(error.spec.map { $0.worded(field) } ?? error.message, error.next)
    }

    /// Definition keys for fields and no way out: what is said where no front end words it.
    package static let plain = FrontEndWording(inputs: .browser, field: \.rawValue, next: { _ in nil })
}
