import Foundation
import StrataJSON

/// Resolves a possibly relative URL against `base`. A result must stay http(s) when the base is
/// http(s): a server cannot point Strata at `file://` (or any other scheme).
public func resolve(_ raw: String, against base: String) -> String? {
    BaseURL(base).resolve(raw)
}

/// A URL that others are resolved against (``resolve(_:against:)``), parsed once: a page of
/// detail URLs resolved against one list URL parses the list URL once, not once per item.
struct BaseURL: Sendable {
    private let url: URL?
    /// Results must stay http(s).
    private let web: Bool
    /// `scheme://authority` of a plain absolute base (``isPlainAbsolute(_:)``), which a
    /// path-absolute reference (`/items/5`) is appended to.
    private let origin: String?

    init(_ base: String) {
        url = URL(string: base)
        let scheme = url?.scheme?.lowercased()
        web = scheme == "http" || scheme == "https"
        var base = base
        origin = base.withUTF8 { b in Self.plainAbsoluteEnd(b).map { String(decoding: b[..<$0], as: UTF8.self) } }
    }

    /// The absolute URL `raw` names, read against this base; nil when it names none, or one
    /// that is not http(s) under an http(s) base.
    ///
    /// Foundation resolves it (`URL(string:relativeTo:)`), except for the two forms detail and
    /// image URLs take, which are worked out from the bytes as Foundation would (about 3 µs
    /// each, twice per detail of a fetch): an absolute http(s) URL with a plain host
    /// (``isPlainAbsolute(_:)``: itself), and a path-absolute reference without dot segments
    /// under such a base (the base's `scheme://authority` and the reference).
    func resolve(_ raw: String) -> String? {
        guard let url else { return nil }
        if Self.isPlainAbsolute(raw) { return raw }
        if let origin, Self.isPlainPath(raw) { return origin + raw }
        guard let u = URL(string: raw, relativeTo: url)?.absoluteURL, let scheme = u.scheme?.lowercased() else { return nil }
        if web { guard scheme == "http" || scheme == "https" else { return nil } }
        return u.absoluteString
    }

    /// Whether `raw` is an absolute http(s) URL that Foundation resolves to itself: a scheme
    /// `http://` or `https://` (any case), a plain host and port (``authorityEnd(_:)``), then
    /// only characters a URL may hold as they are (``isPlainRest(_:from:dotSegments:)``).
    /// Foundation keeps such a URL byte for byte, dot segments included, and only
    /// percent-encodes what falls outside that set.
    static func isPlainAbsolute(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { b in plainAbsoluteEnd(b) != nil }
    }

    /// Where the authority of `b` ends when `b` is a plain absolute URL (``isPlainAbsolute(_:)``).
    private static func plainAbsoluteEnd(_ b: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let end = authorityEnd(b), isPlainRest(b, from: end, dotSegments: true) else { return nil }
        return end
    }

    /// A plain absolute URL (``isPlainAbsolute(_:)``) cut as `URLComponents` cuts it: its host
    /// and port (the port as a number prints it: `h:080` is `h:80`), and its path (`/` when
    /// empty) and query, without the fragment. Nil for any other URL.
    static func splitPlain(_ url: String) -> (host: String, target: String)? {
        var url = url
        return url.withUTF8 { b in
            guard let end = plainAbsoluteEnd(b) else { return nil }
            let hostStart = b[4] == 0x3A ? 7 : 8  // after `http://` or `https://`
            var host = String(decoding: b[hostStart..<end], as: UTF8.self)
            if let colon = host.utf8.firstIndex(of: 0x3A), let port = Int(host[host.index(after: colon)...]) {
                host = "\(host[..<colon]):\(port)"
            }
            let fragment = b[end...].firstIndex(of: 0x23) ?? b.count
            let query = b[end..<fragment].firstIndex(of: 0x3F) ?? fragment
            let path = query > end ? String(decoding: b[end..<query], as: UTF8.self) : "/"
            return (host, path + String(decoding: b[query..<fragment], as: UTF8.self))
        }
    }

    /// Whether `raw` is a path-absolute reference (`/…`, not `//…`) of plain characters whose
    /// path has no `.` or `..` segment (which Foundation would remove).
    static func isPlainPath(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { b in
            guard b.count > 0, b[0] == 0x2F, b.count == 1 || b[1] != 0x2F else { return false }
            return isPlainRest(b, from: 0, dotSegments: false)
        }
    }

    /// Where the authority of a plain absolute http(s) URL ends: after `http://` or `https://`
    /// (any case), a host of letters, digits and `-._~`, then perhaps a port of one to five
    /// digits below 65,536, followed by the end, `/`, `?` or `#`. Nil for anything else (user
    /// info, IPv6 hosts, other schemes: Foundation's to resolve).
    static func authorityEnd(_ b: UnsafeBufferPointer<UInt8>) -> Int? {
        func lower(_ c: UInt8) -> UInt8 { c | 0x20 }
        var i: Int
        guard b.count > 8, lower(b[0]) == 0x68, lower(b[1]) == 0x74, lower(b[2]) == 0x74, lower(b[3]) == 0x70 else { return nil }
        if b[4] == 0x3A { i = 5 } else if lower(b[4]) == 0x73, b[5] == 0x3A { i = 6 } else { return nil }
        guard i + 2 < b.count, b[i] == 0x2F, b[i + 1] == 0x2F else { return nil }
        i += 2
        let hostStart = i
        while i < b.count, b[i] < 0x80, hostBytes[Int(b[i])] { i += 1 }
        guard i > hostStart else { return nil }
        if i < b.count, b[i] == 0x3A {
            i += 1
            var port = 0, digits = 0
            while i < b.count, (0x30...0x39).contains(b[i]) {
                port = port * 10 + Int(b[i] - 0x30)
                digits += 1
                i += 1
                if digits > 5 { return nil }
            }
            guard digits > 0, port < 65_536 else { return nil }
        }
        guard i == b.count || b[i] == 0x2F || b[i] == 0x3F || b[i] == 0x23 else { return nil }
        return i
    }

    /// Whether `b[from...]` holds only characters a URL may hold as they are (RFC 3986's
    /// unreserved and delimiter characters, `%` before two hex digits) and at most one `#`;
    /// unless `dotSegments`, also no `.` or `..` segment in its path (before `?` or `#`).
    static func isPlainRest(_ b: UnsafeBufferPointer<UInt8>, from: Int, dotSegments: Bool) -> Bool {
        var i = from
        var fragments = 0
        var inPath = true
        while i < b.count {
            let c = b[i]
            if c == 0x25 {
                guard i + 2 < b.count, b[i + 1].isHexDigit, b[i + 2].isHexDigit else { return false }
                i += 3
                continue
            }
            if c == 0x3F || c == 0x23 { inPath = false }
            if c == 0x23 { fragments += 1; if fragments > 1 { return false } }
            guard c < 0x80, plainURLBytes[Int(c)] else { return false }
            // `/.` then the end of the path, `/` or another `.`: a dot segment (or, for `/..x`,
            // close enough to one to leave to Foundation).
            if !dotSegments, inPath, c == 0x2F, i + 1 < b.count, b[i + 1] == 0x2E {
                guard i + 2 < b.count else { return false }
                let n = b[i + 2]
                if n == 0x2F || n == 0x2E || n == 0x3F || n == 0x23 { return false }
            }
            i += 1
        }
        return true
    }
}

/// ASCII bytes a URL holds as they are: letters, digits, `-._~` and the delimiters
/// `:/?#@!$&'()*+,;=` (not `[` and `]`, which only an IPv6 host may hold).
private let plainURLBytes: [Bool] = (0..<128).map { c in
    let u = UInt8(c)
    return (0x30...0x39).contains(u) || (0x41...0x5A).contains(u) || (0x61...0x7A).contains(u) || "-._~:/?#@!$&'()*+,;=".utf8.contains(u)
}

/// ASCII bytes of a host the shortcut takes: letters, digits and `-._~`.
private let hostBytes: [Bool] = (0..<128).map { c in
    let u = UInt8(c)
    return (0x30...0x39).contains(u) || (0x41...0x5A).contains(u) || (0x61...0x7A).contains(u) || "-._~".utf8.contains(u)
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}

func seconds(_ d: Duration) -> Double { d.inSeconds }
