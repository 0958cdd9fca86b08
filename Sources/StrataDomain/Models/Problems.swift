/// What a person can do about a problem, in the Domain's terms. The Domain and the layers below
/// say what went wrong; each front end words the way out itself: the CLI as a command to type,
/// the HTTP API and the web page in theirs.
package enum NextStep: Sendable, Hashable {
    /// See the defined sources.
    case listSources
    /// Define a first source.
    case defineSource
    /// Change a defined source (replace its definition).
    case replaceSource
    /// Give a source's field a value (a write URL, a schedule, a header…); any source when nil.
    case changeSource(source: String?, field: SourceSpec.Field)
    /// Check a source's field: the API's answer does not fit it.
    case checkField(SourceSpec.Field)
    /// Look at a source's definition (its headers, its auth).
    case showSource(String)
    /// Give a literal credential of a header another way than in the definition.
    case keepSecretOut(header: String)
    /// Give a header's kept secret again.
    case giveSecretAgain(source: String, header: String)
    /// Read a source that records traffic (it has no list to fetch) through what serves it.
    case readRecorded
    /// Fetch the source first.
    case fetch(source: String)
    /// See the ids of a source's items.
    case listItems(source: String)
    /// Read the log's events.
    case readLog
    /// Read from later on, or keep more history.
    case changeRetention(source: String, from: UInt64)
    /// See the alerts.
    case listAlerts
    /// Remove an alert before adding one of the same name.
    case removeAlert(source: String, name: String)
    /// See every write, closed ones too.
    case listWrites
    /// Settle a write the server refused or conflicted with: see both sides, retry or drop it.
    case settleWrite(source: String, write: UInt64)
    /// Index a source's fields (the list replaces the set), so reads by them use the index.
    case indexFields(source: String, fields: [String])
    /// See the whole difference of a source's items between two points.
    case showDiff(source: String, from: UInt64, to: UInt64)
    /// Stage a first edit in a session.
    case stageEdit(session: String)
    /// Set the user writes are signed by.
    case setUser
    /// Check a git import's path and revision range.
    case checkGitImport
    /// Check the store: something stored is damaged.
    case verifyStore
    /// Give the encrypted store's key.
    case giveStoreKey
    /// Stop giving a key to a store without encryption, or encrypt it.
    case dropStoreKey
    /// Make a store key file.
    case makeStoreKey(file: String)
    /// Install the team's redaction key.
    case installRedactionKey
    /// Install the team's redaction key, or change keys for everyone.
    case rotateRedactionKey
    /// Add a team log.
    case addRemote(name: String?)
    /// Remove a team log.
    case removeRemote(name: String)
    /// Take over a lease another node holds.
    case takeOverLease
    /// Wait, or allow a request more time.
    case allowMoreTime
    /// Allow a larger body.
    case allowLargerBody
}

/// A sentence that mentions a source's fields, typed, so that each front end names them its own
/// way (the CLI as flags: `--page-size`; the HTTP API as the definition's keys: `pageSize`).
package struct FieldText: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    package enum Part: Sendable, Hashable {
        case text(String)
        case field(SourceSpec.Field)
    }

    package var parts: [Part]

    package init(stringLiteral value: String) { parts = [.text(value)] }

    package init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

    package struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []
        package init(literalCapacity: Int, interpolationCount: Int) {}
        package mutating func appendLiteral(_ literal: String) { parts.append(.text(literal)) }
        package mutating func appendInterpolation(_ field: SourceSpec.Field) { parts.append(.field(field)) }
        package mutating func appendInterpolation(_ value: some CustomStringConvertible) { parts.append(.text(value.description)) }
    }

    /// The sentence with each field named by `name`.
    package func worded(_ name: (SourceSpec.Field) -> String) -> String {
        parts.map {
            switch $0 {
            case .text(let t): t
            case .field(let f): name(f)
            }
        }.joined()
    }

    /// Fields by the definition's keys.
    package var description: String { worded(\.rawValue) }
}

/// A source spec that cannot be defined: the field at fault and why.
package struct SpecProblem: Error, Sendable, Hashable, CustomStringConvertible {
    package var source: String
    package var field: SourceSpec.Field
    package var reason: FieldText

    package init(source: String, field: SourceSpec.Field, reason: FieldText) {
        self.source = source
        self.field = field
        self.reason = reason
    }

    /// The problem with every field named by `name`.
    package func worded(_ name: (SourceSpec.Field) -> String) -> String { "source \(source): \(name(field)) \(reason.worded(name))" }

    package var description: String { worded(\.rawValue) }
}
