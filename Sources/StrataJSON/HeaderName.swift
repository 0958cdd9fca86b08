/// The one rule for an HTTP header name Strata is told about (`--redact-header`, on a source, a
/// proxy or an import): an RFC 9110 token, `1*tchar`, so letters, digits and
/// ``!#$%&'*+-.^_`|~``. Anything else (a colon, a space, a non-ASCII letter) is no header name.
package enum HeaderName {
    package static func isValid(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { b in (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || Self.symbols.contains(b) }
    }

    private static let symbols = Set("!#$%&'*+-.^_`|~".utf8)
}
