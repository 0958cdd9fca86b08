import Foundation

extension JSONValue {
    /// An integer as a JSON number, for reports.
    package static func int<T: BinaryInteger>(_ v: T) -> JSONValue { .number(String(v)) }

    /// A measurement as a JSON number with four decimals, for reports.
    package static func double(_ v: Double) -> JSONValue { .number(String(format: "%.4f", v)) }
}
