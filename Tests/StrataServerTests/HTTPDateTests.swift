import Foundation
@testable import StrataServer
import Testing

/// IMF-fixdate by hand: what `Memento-Datetime` says and `Accept-Datetime` is read as.
@Suite struct HTTPDateTests {
    @Test func formatsAndParsesIMFFixdate() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777.9)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("  Sun, 01 Mar 2026 09:00:00 GMT ") == ISO8601DateFormatter().date(from: "2026-03-01T09:00:00Z"))
        for d in stride(from: 0.0, to: 4_000_000_000, by: 86_399_917) {
            #expect(HTTPDate.parse(HTTPDate.format(Date(timeIntervalSince1970: d))) == Date(timeIntervalSince1970: d))
        }
        for bad in [
            "", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun 06 Nov 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:49:37 GMT", "1994-11-06T08:49:37Z"
        ] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }
}
