import EventStore
import Foundation
@testable import StrataData
import Testing

/// Resolving detail and image URLs: the shortcut for plain absolute URLs gives what Foundation
/// gives, byte for byte, on generated URLs full of the characters that make them differ.
@Suite struct BaseURLTests {
    /// What `resolve(_:against:)` returned before the shortcut: Foundation's resolution, kept
    /// http(s) under an http(s) base.
    static func foundation(_ raw: String, against base: String) -> String? {
        guard let b = URL(string: base), let u = URL(string: raw, relativeTo: b)?.absoluteURL, let scheme = u.scheme?.lowercased() else { return nil }
        let web = ["http", "https"].contains(b.scheme?.lowercased() ?? "")
        if web, scheme != "http", scheme != "https" { return nil }
        return u.absoluteString
    }

    @Test func plainAbsoluteURLsResolveAsFoundationResolvesThem() {
        let schemes = [
            "http://", "https://", "HTTP://", "Https://", "http:/", "http:", "ftp://", "http:///", "https://?", "file://", "",
            "/", "/", "//", "/."
        ]
        let bases = [
            "http://127.0.0.1:8080/synthetic/items?n=10", "HTTP://Example.COM:80/a/b/c?x#f", "https://h.b", "http://h.b:0080/x/",
            "file:///tmp/list.json", "http://u@h.b/x", "http://h.b/a%20b/../c"
        ]
        let pieces = [
            "a", "Z", "0", "9", "-", ".", "_", "~", ":", "/", "?", "#", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";",
            "=", "%", "%2F", "%zz", "%4", "[", "]", "{", "}", " ", "|", "\\", "^", "`", "\"", "<", ">", "ä", "/../", "/./",
            "example.com", "127.0.0.1:8080", ":65536", ":0", "u@", "items/5", "?bytes=4096", "#top"
        ]
        let plain = [
            "a", "Z", "0", "-", ".", "_", "~", ":", "/", "?", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=",
            "%2F", "/../", "/./", "items/5", "?bytes=4096", "#top"
        ]
        let hosts = ["example.com", "127.0.0.1", "a-b.c_d~", "Example.COM", "", "u@h", "[::1]", "h%41"]
        let ports = ["", "", ":8080", ":0", ":65535", ":65536", ":", ":123456", ":8a"]
        var rng = SplitMix64(seed: 29)
        func any<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        var shortcuts = 0, paths = 0
        for i in 0..<40_000 {
            // Half of them shaped like URLs (scheme, host, port, then anything), half anything
            // (path-absolute references among them).
            var raw = i % 2 == 0 ? any(schemes) + any(hosts) + any(ports) + any(["/", "?", "#", ""]) : any(schemes)
            // A quarter with only characters URLs may hold as they are.
            let from = i % 4 == 0 ? plain : pieces
            for _ in 0..<Int(rng.next() % 12) { raw += any(from) }
            let base = any(bases)
            if BaseURL.isPlainAbsolute(raw) { shortcuts += 1 }
            if BaseURL.isPlainPath(raw) { paths += 1 }
            let got = resolve(raw, against: base), want = Self.foundation(raw, against: base)
            #expect(got == want, "\(raw) against \(base)")
            if got != want { return }
        }
        // The generator reaches the shortcut often enough for the comparison to mean something.
        #expect(shortcuts > 500 && paths > 1_000, "\(shortcuts) absolute, \(paths) path-absolute")
    }

    @Test func theShortcutTakesOnlyWhatFoundationKeepsAsItIs() {
        #expect(BaseURL.isPlainPath("/synthetic/items/5?bytes=4096") && BaseURL.isPlainPath("/.x") && BaseURL.isPlainPath("/x?y=/../z"))
        for raw in ["//h/x", "/a/../b", "/a/./b", "/a/.", "/a/..", "/x y", "x/y", "", "/x#a#b"] { #expect(!BaseURL.isPlainPath(raw), "\(raw)") }
        for raw in ["http://127.0.0.1:8080/synthetic/items/5?bytes=4096", "HTTPS://Example.COM/a/./b/../c?q=(a)&b=*!$'+,~#f", "http://a.b/x%20y"] {
            #expect(BaseURL.isPlainAbsolute(raw), "\(raw)")
        }
        for raw in [
            "http://a.b/x y", "http://a.b/x%zz", "http://a.b/ä", "http://[::1]:80/x", "http:///x", "http:a.b", "http://a#b#c",
            "ftp://a.b/x", "/items/5", "items/5", "http://a.b/x%4", "http://a:99999/x", "http://u@a.b/x", "http://a.b:/x"
        ] {
            #expect(!BaseURL.isPlainAbsolute(raw), "\(raw)")
        }
    }
}

/// The recordings index cuts a plain URL into host and target as URLComponents does.
@Suite struct RecordingSplitTests {
    /// The split before the shortcut.
    static func components(_ url: String) -> (host: String, target: String)? {
        guard let c = URLComponents(string: url), let host = c.host, !host.isEmpty else { return nil }
        let authority = c.port.map { "\(host):\($0)" } ?? host
        let path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        return (authority, path + (c.percentEncodedQuery.map { "?" + $0 } ?? ""))
    }

    @Test func plainURLsSplitAsURLComponentsSplitsThem() {
        let schemes = ["http://", "https://", "HTTP://"]
        let hosts = ["example.com", "127.0.0.1", "Example.COM", "a-b.c_d~"]
        let ports = ["", ":8080", ":0", ":080", ":65535"]
        let pieces = ["a", "/", "?", "#", "=", "&", "%2F", "/../", "items/5", "?bytes=4096", "#top", ":", "@", "!", "'", "(", "*", "+", ",", ";"]
        var rng = SplitMix64(seed: 41)
        func any<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        var plain = 0
        for _ in 0..<10_000 {
            var url = any(schemes) + any(hosts) + any(ports)
            for _ in 0..<Int(rng.next() % 8) { url += any(pieces) }
            if BaseURL.isPlainAbsolute(url) { plain += 1 }
            let got = RecordingIndex.split(url), want = Self.components(url)
            #expect(got?.host == want?.host && got?.target == want?.target, "\(url): \(String(describing: got)) against \(String(describing: want))")
            if got?.host != want?.host || got?.target != want?.target { return }
        }
        #expect(plain > 3_000)
    }
}
