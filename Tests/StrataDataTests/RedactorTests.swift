import EventStore
import StrataData
import Testing

/// The placeholder: 12 hex digits of an HMAC over the path and the value, under the store's key.
@Suite struct RedactorTests {
    @Test func equalValuesAreEqualAndAnythingElseDiffers() {
        let key = [UInt8](repeating: 1, count: 32)
        let r = Redactor(key: key, paths: ["email"])
        let a = r.placeholder(path: "email", value: .string("ann@example.com"))
        #expect(a.count == 23 && a.hasPrefix("[redacted:") && a.hasSuffix("]"))
        #expect(a.dropFirst(10).dropLast().allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(a == r.placeholder(path: "email", value: .string("ann@example.com")))
        #expect(a != r.placeholder(path: "email", value: .string("bob@example.com")), "a change shows as a change")
        #expect(a != r.placeholder(path: "contact.email", value: .string("ann@example.com")), "the path is part of it")
        #expect(a != Redactor(key: [UInt8](repeating: 2, count: 32), paths: ["email"]).placeholder(path: "email", value: .string("ann@example.com")))
        // A number and the string of its digits are different values.
        #expect(r.placeholder(path: "n", value: .number("5")) != r.placeholder(path: "n", value: .string("5")))
        #expect(CredentialMask.isPlaceholder(a))
    }

    @Test func aBodyThatCannotBeReadIsRefusedNotStored() {
        let r = Redactor(key: [UInt8](repeating: 1, count: 32), paths: ["email"])
        #expect(throws: FetchError.self) { _ = try r.list(Array("<html>".utf8), items: "results", url: "http://x") }
        // A recorded body that is not JSON (an image, HTML) is kept as it came.
        #expect(r.recorded(Array("<html>".utf8), headers: []) == Array("<html>".utf8))
        let json = Array(#"{"email":"a@b.c"}"#.utf8)
        #expect(r.recorded(json, headers: [HeaderLine("Content-Encoding", "gzip")]) == json, "a compressed body is not read as JSON")
        #expect(r.recorded(json, headers: []) != json)
    }
}
