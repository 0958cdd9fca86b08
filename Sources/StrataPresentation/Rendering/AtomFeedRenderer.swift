package import Foundation
package import StrataDomain
import StrataJSON

/// A source's changes as an Atom 1.0 feed (RFC 4287): one entry per item change, newest first,
/// with a stable id (`urn:strata:SOURCE:ITEM:SEQ`), `updated` the observed time, a title like
/// `RAV4 (3) changed: price 12300 → 11900`, the changes as text content and a link to the item
/// in `strata serve`.
package struct AtomFeedRenderer: Sendable {
    /// Put before the links' paths: the server's base URL (`http://127.0.0.1:8080`), or empty
    /// for links relative to the feed's own address (RFC 4287 allows IRI references).
    package var baseURL: String

    package init(baseURL: String) { self.baseURL = baseURL }

    package func render(source: String, entries: [FeedEntry], generatedAt: Date) -> String {
        let updated = entries.first.map { LogTime($0.observedAt).iso8601 } ?? LogTime(generatedAt).iso8601
        var out = """
            <?xml version="1.0" encoding="utf-8"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
              <id>urn:strata:\(Self.urn(source))</id>
              <title>\(Self.escape("Changes of \(source)"))</title>
              <updated>\(updated)</updated>
              <author><name>Strata</name></author>
              <link rel="self" href="\(Self.escape(baseURL + "/_strata/feeds/" + ServePaths.segment(source) + ".atom"))"/>
              <generator>Strata</generator>

            """
        for e in entries {
            let link = baseURL + ServePaths.item(source: source, id: e.item.id)
            out += """
                  <entry>
                    <id>urn:strata:\(Self.urn(source)):\(Self.urn(e.item.id)):\(e.seq)</id>
                    <title>\(Self.escape(Self.title(e.item)))</title>
                    <updated>\(LogTime(e.observedAt).iso8601)</updated>
                    <link href="\(Self.escape(link))"/>
                    <content type="text">\(Self.escape(Self.content(e)))</content>
                  </entry>

                """
        }
        return out + "</feed>\n"
    }

    /// An alert's notifications as a feed: one entry per notification, newest first, its id
    /// `urn:strata:alert:SOURCE:NAME:NOTIFICATION`, its title the notification's.
    package func render(alert: String, notifications: [AlertNotification], generatedAt: Date) -> String {
        let updated = notifications.first.map { LogTime($0.observedAt).iso8601 } ?? LogTime(generatedAt).iso8601
        let parts = alert.split(separator: "/", maxSplits: 1).map(String.init)
        let urn = parts.map(Self.urn).joined(separator: ":")
        var out = """
            <?xml version="1.0" encoding="utf-8"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
              <id>urn:strata:alert:\(urn)</id>
              <title>\(Self.escape("Alert \(alert)"))</title>
              <updated>\(updated)</updated>
              <author><name>Strata</name></author>
              <link rel="self" href="\(Self.escape(baseURL + "/_strata/feeds/alerts/" + parts.map(ServePaths.segment).joined(separator: "/") + ".atom"))"/>
              <generator>Strata</generator>

            """
        for n in notifications {
            let link = baseURL + ServePaths.item(source: n.source, id: n.item)
            var lines = ["\(n.kind) at seq \(n.seq), observed \(LogTime(n.observedAt).iso8601); notification \(n.id)"]
            for c in n.changes { lines.append("\(ItemDiff.field(c.path)): \(ItemDiff.text(c.old)) → \(ItemDiff.text(c.new))") }
            out += """
                  <entry>
                    <id>urn:strata:alert:\(urn):\(Self.urn(n.id))</id>
                    <title>\(Self.escape(n.title))</title>
                    <updated>\(LogTime(n.observedAt).iso8601)</updated>
                    <link href="\(Self.escape(link))"/>
                    <content type="text">\(Self.escape(lines.joined(separator: "\n")))</content>
                  </entry>

                """
        }
        return out + "</feed>\n"
    }

    static func title(_ d: ItemDiff) -> String { d.headline }

    static func content(_ e: FeedEntry) -> String {
        var lines = ["\(e.item.kind.rawValue) at seq \(e.seq), observed \(LogTime(e.observedAt).iso8601)"]
        for c in e.item.changes { lines.append("\(ItemDiff.field(c.path)): \(ItemDiff.text(c.old)) → \(ItemDiff.text(c.new))") }
        return lines.joined(separator: "\n")
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for ch in s.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            // XML 1.0 forbids most control characters even escaped.
            case "\t", "\n", "\r": out.unicodeScalars.append(ch)
            default: if ch.value >= 0x20 && ch.value != 0xFFFE && ch.value != 0xFFFF { out.unicodeScalars.append(ch) } else { out += "\u{FFFD}" }
            }
        }
        return out
    }

    /// A name inside a `urn:` (colons encoded, so the parts stay apart).
    static func urn(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? s
    }
}
