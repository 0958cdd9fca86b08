package import Foundation
import Mustache
package import StrataDomain
import StrataJSON

/// The web UI's pages (`/_strata/ui/`), rendered from the same domain models the CLI and the
/// JSON API read, through templates that escape every value (``Templates``). Knows no HTTP:
/// the server hands it what the use cases answered and the request's parameters, and sends the
/// HTML back.
package struct WebPages: Sendable {
    let library: MustacheLibrary

    package init() throws {
        WebEscaping.registered
        var library = MustacheLibrary()
        // Every template selects the pages' escaping first; a partial and a layout render in the
        // context of the template that includes them, so they escape the same way.
        for (name, text) in Templates.all { try library.register("{{% CONTENT_TYPE: \(WebEscaping.name) }}" + text, named: name) }
        self.library = library
    }

    /// What every page shows around its content: its title, the point it shows when that is not
    /// now (a banner with a link back), its JSON twin, and the stream that tells it of new events.
    package struct Chrome: Sendable {
        package var title: String
        /// The point the page shows, as the request named it; nil for now.
        package var asOf: String?
        /// The same page at now.
        package var nowLink: String
        /// The page's JSON twin in `/_strata/`.
        package var json: String
        /// Whether the page shows now and should say when new events land.
        package var live: Bool

        package init(title: String, asOf: String?, nowLink: String, json: String) {
            self.title = title; self.asOf = asOf; self.nowLink = nowLink; self.json = json; live = asOf == nil
        }

        var context: [String: Any] {
            var c: [String: Any] = ["title": title, "nowLink": nowLink, "json": json]
            if let asOf { c["asOf"] = asOf }
            if live { c["live"] = "/_strata/events" }
            return c
        }
    }

    func render(_ template: String, _ chrome: Chrome, _ content: [String: Any]) -> String {
        Self.visible(library.render(chrome.context.merging(content) { _, new in new }, withTemplate: template) ?? "")
    }

    /// The page with every control character from the data shown as its symbol (`␛` for ESC,
    /// `␇` for BEL; U+FFFD for DEL and C1): escaping keeps markup out, this keeps characters HTML
    /// does not allow in text out. The templates hold none of their own but line ends.
    static func visible(_ html: String) -> String {
        guard html.unicodeScalars.contains(where: isControl) else { return html }
        var out = String.UnicodeScalarView()
        for u in html.unicodeScalars {
            if !isControl(u) {
                out.append(u)
            } else if u.value < 0x20 {
                out.append(Unicode.Scalar(0x2400 + u.value)!)
            } else {
                out.append("\u{FFFD}")
            }
        }
        return String(out)
    }

    static func isControl(_ u: Unicode.Scalar) -> Bool {
        (u.value < 0x20 && u != "\n" && u != "\t" && u != "\r") || (u.value >= 0x7F && u.value < 0xA0)
    }

    /// A page saying what went wrong, in the words the JSON API uses.
    package func error(heading: String, message: String, chrome: Chrome) -> String {
        render("error", chrome, ["heading": heading, "message": message])
    }

    // MARK: Sources

    package struct SourceRow: Sendable {
        package var source: Source
        package var items: Int
        package init(source: Source, items: Int) { self.source = source; self.items = items }
    }

    package func sources(_ rows: [SourceRow], chrome: Chrome) -> String {
        let list: [[String: Any]] = rows.map { row in
            let s = row.source
            var outcome = "never fetched", outcomeClass = ""
            var link = Links.source(s.name, asOf: chrome.asOf)
            if s.isRecorded { link = "/_strata/ui/sources/\(Links.segment(s.name))/exchanges" }
            switch s.lastRun?.outcome {
            case .completed(let complete)?: outcome = complete ? "complete" : "partial"
            case .failed(let why)?: (outcome, outcomeClass) = ("failed: " + why, "error")
            case nil: if s.isRecorded { outcome = "recorded" }
            }
            return [
                "name": s.name, "link": link, "kind": s.isRecorded ? "recorded" : "fetched",
                "items": row.items, "lastFetch": s.lastRun.map { Self.time($0.at) } ?? "—", "outcome": outcome, "outcomeClass": outcomeClass,
                "indexed": s.indexPaths.joined(separator: ", ")
            ]
        }
        return render("sources", chrome, ["rows": list, "hasRows": !list.isEmpty])
    }

    // MARK: A source's items

    /// What the items page was asked for.
    package struct ItemsRequest: Sendable {
        package var search: String?
        package var wheres: [String]
        package var sort: String?
        package var after: String?
        package var asOf: String?
        package var limit: Int
        /// The indexed fields whose values are counted (`facet=`).
        package var facets: [String]
        package init(search: String?, wheres: [String], sort: String?, after: String?, asOf: String?, limit: Int, facets: [String] = []) {
            self.search = search; self.wheres = wheres; self.sort = sort; self.after = after; self.asOf = asOf; self.limit = limit
            self.facets = facets
        }
    }

    /// One indexed field's values and their counts.
    package struct Facet: Sendable {
        package var path: String
        package var counts: [(value: String, count: Int)]
        package init(path: String, counts: [(value: String, count: Int)]) { self.path = path; self.counts = counts }
    }

    /// A point of the slider: a seq where the source was observed, and when.
    package struct Point: Sendable {
        package var seq: UInt64
        package var at: Date
        package init(seq: UInt64, at: Date) { self.seq = seq; self.at = at }
    }

    package func items(
        source: Source, page: ItemPage?, request: ItemsRequest, error: String?, facets: [Facet], points: [Point], current: UInt64,
        chrome: Chrome
    ) -> String {
        let name = source.name
        func link(_ change: (inout [(String, String)]) -> Void) -> String {
            var q: [(String, String)] = []
            if let s = request.search, !s.isEmpty { q.append(("search", s)) }
            for w in request.wheres where !w.isEmpty { q.append(("where", w)) }
            if let s = request.sort { q.append(("sort", s)) }
            if let a = request.asOf { q.append(("as_of", a)) }
            for f in request.facets { q.append(("facet", f)) }
            change(&q)
            return Links.query("/_strata/ui/sources/\(Links.segment(name))", q)
        }
        var columns: [[String: Any]] = [["label": "Image"], ["label": "Id"], ["label": "Title"], ["label": "Subtitle"]]
        for path in source.indexPaths {
            // Sorting by an indexed field: ascending first, then descending; the arrow says which.
            let mark = request.sort == path ? " ▲" : request.sort == "-" + path ? " ▼" : ""
            let next = request.sort == path ? "-" + path : path
            columns.append([
                "label": path, "mark": mark,
                "link": link { q in
                    q.removeAll { $0.0 == "sort" }; q.append(("sort", next))
                }
            ])
        }
        let items = page?.items ?? []
        let rows: [[String: Any]] = items.map { item in
            var row: [String: Any] = [
                "id": item.id, "title": item.title, "subtitle": item.subtitle.joined(separator: " · "),
                "link": Links.item(name, item.id, asOf: request.asOf), "fields": source.indexPaths.map { p in item.fields.first { $0.path == p }?.value ?? "" },
                "pending": item.pending != .none
            ]
            if item.image != nil { row["thumb"] = Links.image(name, item.id, asOf: request.asOf) }
            return row
        }
        var content: [String: Any] = [
            "name": name, "total": page?.total ?? 0, "usedIndex": page?.usedIndex ?? false, "search": request.search ?? "",
            "where": request.wheres.joined(separator: " and "), "columns": columns, "rows": rows, "hasRows": !rows.isEmpty,
            "changesLink": Links.query("/_strata/ui/sources/\(Links.segment(name))/changes", []),
            "schemaLink": Links.query("/_strata/ui/sources/\(Links.segment(name))/schema", request.asOf.map { [("as_of", $0)] } ?? [])
        ]
        if let sort = request.sort { content["sort"] = sort }
        if let a = request.asOf { content["asOfValue"] = a }
        if let error { content["error"] = error }
        if request.after != nil { content["first"] = link { _ in } }
        if let last = items.last, items.count == request.limit { content["next"] = link { $0.append(("after", last.id)) } }
        content["facets"] = facets.map { f in
            [
                "path": f.path,
                "values": f.counts.map { v in
                    ["value": v.value, "count": v.count, "link": link { $0.append(("where", "\(f.path) = \(Self.literal(v.value))")) }] as [String: Any]
                }
            ] as [String: Any]
        }
        content["hasFacets"] = !facets.isEmpty
        let facetLinks = source.indexPaths.filter { p in !facets.contains { $0.path == p } }.map { p in
            ["path": p, "link": link { q in q.append(("facet", p)) }] as [String: Any]
        }
        content["facetLinks"] = facetLinks
        content["hasFacetLinks"] = !facetLinks.isEmpty
        if !points.isEmpty {
            // At most 120 stops (the first, the last and the one shown among them): a slider is a
            // few hundred pixels wide, and the date field reaches any point between.
            let at = points.lastIndex { $0.seq <= current } ?? points.count - 1
            let step = max(1, (points.count + 119) / 120)
            let stops = points.indices.filter { $0 % step == 0 || $0 == points.count - 1 || $0 == at }.map { points[$0] }
            let index = stops.lastIndex { $0.seq <= current } ?? stops.count - 1
            // Labels are made by the script from the times (epoch seconds): numbers only here.
            content["slider"] =
                [
                    "max": stops.count - 1, "value": index, "label": Self.pointLabel(stops[index]),
                    "points": stops.map { String($0.seq) }.joined(separator: " "),
                    "times": stops.map { String(Int64($0.at.timeIntervalSince1970)) }.joined(separator: " "), "date": Self.localDate(stops[index].at)
                ] as [String: Any]
            if let search = request.search, var slider = content["slider"] as? [String: Any] {
                slider["search"] = search
                content["slider"] = slider
            }
        }
        return render("source", chrome, content)
    }

    /// How many versions an item's page shows at once (older ones a link away).
    package static let versionsPerPage = 50
    /// The text a page of versions shows in their changes, at most (a version whose changes
    /// alone are more is shown alone): a page of an incident rewritten daily stays under 150 KB.
    static let changeBytesPerPage = 80_000

    static func pointLabel(_ p: Point) -> String { "seq \(p.seq) · \(time(p.at))" }

    /// A facet value as an expression literal: numbers and booleans as they are, text quoted.
    static func literal(_ value: String) -> String {
        if Double(value) != nil || value == "true" || value == "false" || value == "null" { return value }
        return "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    // MARK: An item

    /// An item's page: its fields, and the versions of `history`'s page as a timeline (those
    /// `history` has in full, as many as fit ``changeBytesPerPage``), each a link to its neighbours.
    package func item(
        item: Item, history: ItemHistoryPage, compare: (from: UInt64, to: UInt64, changes: [Change])?, chart: (path: String, versions: [ItemVersion])?,
        asOf: String?, chrome: Chrome
    ) -> String {
        let name = item.source
        var content: [String: Any] = [
            "source": name, "sourceLink": Links.source(name, asOf: asOf), "title": item.title, "id": item.id, "version": item.version,
            "removed": item.isRemoved
        ]
        if item.image != nil { content["image"] = Links.image(name, item.id, asOf: asOf) }
        if let url = item.imageURL, Links.isWeb(url) { content["link"] = url }
        content["fields"] = Self.flatten(item.merged).map { path, value in
            var f: [String: Any] = ["path": path, "value": value.displayText]
            if case .string(let s) = value, Links.isWeb(s) { f["url"] = s }
            return f
        }
        // Every version by seq, as indexes into the marks.
        let marks = history.marks
        let ordered = marks.indices.sorted { marks[$0].seq < marks[$1].seq }
        let fromSeq = compare?.from ?? ordered.dropLast().last.map { marks[$0].seq } ?? 0
        let toSeq = compare?.to ?? ordered.last.map { marks[$0].seq } ?? 0
        // The page's versions, newest first, as many as fit in ``changeBytesPerPage`` (one at
        // least): each with its changes as rows.
        let window = history.page.window(in: ordered.map { marks[$0].seq })
        let end = window.upperBound
        var start = end
        var rows: [Int: [[String: Any]]] = [:]
        var budget = Self.changeBytesPerPage
        while start > window.lowerBound, budget > 0 || start == end {
            let changes = history.versions[ordered[start - 1]]?.changes.map(Self.sizedChangeRow) ?? []
            let cost = changes.reduce(200) { $0 + $1.bytes }
            if cost > budget, start < end { break }
            budget -= cost
            start -= 1
            rows[start] = changes.map(\.row)
        }
        let shown = start..<end
        content["versions"] = ordered.enumerated().filter { n, i in shown.contains(n) || marks[i].seq == fromSeq || marks[i].seq == toSeq }.map {
            _, i in
            let v = marks[i]
            return ["seq": v.seq, "label": "v\(v.version) · seq \(v.seq)", "isFrom": v.seq == fromSeq, "isTo": v.seq == toSeq] as [String: Any]
        }
        if start > 0 {
            content["olderVersions"] = Links.query(
                Links.itemPath(name, item.id), [("before", String(marks[ordered[start]].seq))] + (asOf.map { [("as_of", $0)] } ?? []))
        }
        content["timeline"] = shown.reversed().compactMap { n -> [String: Any]? in
            guard let v = history.versions[ordered[n]] else { return nil }
            var t: [String: Any] = [
                "seq": Shown(v.seq), "version": Shown(v.version), "kind": Shown(v.kind.rawValue), "iso": Shown(Self.iso(v.recordedAt)),
                "observed": Shown(Self.time(v.recordedAt)),
                // Its labels as one list: one lookup for a row that has none, not three.
                "labels": [
                    v.backfilled ? "backfilled" : nil, v.local.map { $0.state.isOpen } == true ? "pending" : nil, v.restored != nil ? "re-stored" : nil
                ].compactMap { $0 },
                "changes": rows[n] ?? [], "hasChanges": !v.changes.isEmpty,
                "asOfLink": Shown(Links.source(name, asOf: String(v.seq))), "current": n == ordered.count - 1
            ]
            // Every key the template asks for is set, false when absent: a missing one is looked
            // for in every enclosing context, which was most of a long page's time.
            t["origin"] = v.origin != .list ? v.origin.rawValue : false
            t["previous"] = n > 0 ? Shown(marks[ordered[n - 1]].seq) : false
            t["next"] = n + 1 < ordered.count ? Shown(marks[ordered[n + 1]].seq) : false
            return t
        }
        if let compare {
            content["compare"] =
                [
                    "from": compare.from, "to": compare.to, "changes": compare.changes.map(Self.changeRow), "hasChanges": !compare.changes.isEmpty
                ] as [String: Any]
        }
        // The numeric fields of the newest version, each a chart away.
        let newest = ordered.last.flatMap { history.versions[$0]?.document } ?? item.document
        let numeric = Self.flatten(newest).filter { if case .number = $0.1 { true } else { false } }.map(\.0)
        content["numeric"] = numeric.map { p in
            ["path": p, "link": Links.query(Links.itemPath(name, item.id), [("chart", p)] + (asOf.map { [("as_of", $0)] } ?? []))]
        }
        content["hasNumeric"] = !numeric.isEmpty
        if let chart, let svg = Chart(path: chart.path, versions: chart.versions.sorted { $0.seq < $1.seq }) { content["chart"] = svg.context }
        return render("item", chrome, content)
    }

    /// A field change as rows of the before and after cells: a long text's words marked where
    /// they differ, anything else whole.
    static func changeRow(_ c: Change) -> [String: Any] { sizedChangeRow(c).row }

    /// ``changeRow(_:)`` and the bytes of text it shows. A long text's unchanged runs are cut to
    /// the words around its changes (``WordDiff/elided(_:context:)``).
    static func sizedChangeRow(_ c: Change) -> (row: [String: Any], bytes: Int) {
        var row: [String: Any] = ["path": Shown(c.path), "old": false, "new": false]
        var bytes = c.path.utf8.count
        let old = c.old.map(\.displayText), new = c.new.map(\.displayText)
        if let old, let new, old.count + new.count > 40, case .string = c.old, case .string = c.new {
            let (a, b) = WordDiff.parts(old, new)
            let (x, y) = (WordDiff.elided(a), WordDiff.elided(b))
            row["old"] = ["whole": false, "parts": x.map(\.context)]
            row["new"] = ["whole": false, "parts": y.map(\.context)]
            bytes += (x + y).reduce(0) { $0 + $1.plain.utf8.count + ($1.marked?.utf8.count ?? 0) }
        } else {
            // A value changed whole is marked whole: fewer lookups than a one-part diff.
            if let old { row["old"] = ["whole": Shown(old), "parts": false] }
            if let new { row["new"] = ["whole": Shown(new), "parts": false] }
            bytes += (old?.utf8.count ?? 0) + (new?.utf8.count ?? 0)
        }
        return (row, bytes)
    }

    /// Every scalar of a document with its dotted path (`specs.0.fuel`), containers walked
    /// through; an empty container as its JSON.
    static func flatten(_ value: JSONValue, prefix: String = "") -> [(String, JSONValue)] {
        switch value {
        case .object(let o) where !o.isEmpty:
            return o.keys.sorted().flatMap { flatten(o[$0]!, prefix: prefix.isEmpty ? $0 : prefix + "." + $0) }
        case .array(let a) where !a.isEmpty:
            return a.enumerated().flatMap { flatten($1, prefix: prefix.isEmpty ? String($0) : prefix + "." + String($0)) }
        default:
            return [(prefix.isEmpty ? "(value)" : prefix, value)]
        }
    }

    // MARK: Changes

    package struct ChangesRequest: Sendable {
        package var from: String?
        package var to: String?
        package var when: String?
        package var kinds: Set<ChangeKind>
        package var limit: Int
        package init(from: String?, to: String?, when: String?, kinds: Set<ChangeKind>, limit: Int) {
            self.from = from; self.to = to; self.when = when; self.kinds = kinds; self.limit = limit
        }
    }

    package func changes(source: String, changes: [ItemChange], request: ChangesRequest, head: UInt64, error: String?, chrome: Chrome) -> String {
        var content: [String: Any] = [
            "source": source, "sourceLink": Links.source(source, asOf: nil), "from": request.from ?? "", "to": request.to ?? "",
            "when": request.when ?? "", "head": head, "count": changes.count, "more": changes.count >= request.limit,
            "kinds": ChangeKind.allCases.map { ["name": $0.rawValue, "on": request.kinds.contains($0)] as [String: Any] },
            "sinceLink": Links.query("/_strata/ui/sources/\(Links.segment(source))/changes", [])
        ]
        if let error { content["error"] = error }
        content["rows"] = changes.map { c in
            [
                "seq": c.seq, "iso": Self.iso(c.observedAt), "observed": Self.time(c.observedAt), "kind": c.kind.rawValue, "title": c.title,
                "link": Links.item(source, c.item, asOf: nil) + "#v\(c.seq)", "fields": c.changes.map(\.path).joined(separator: ", ")
            ] as [String: Any]
        }
        return render("changes", chrome, content)
    }

    // MARK: The log

    package func log(entries: [LogEntry], type: String?, stream: String?, event: LogEntry?, older: String?, chrome: Chrome) -> String {
        var content: [String: Any] = ["type": type ?? "", "stream": stream ?? ""]
        content["rows"] = entries.map { e in
            [
                "seq": e.seq, "link": Links.query("/_strata/ui/log", [("seq", String(e.seq))]), "iso": Self.iso(e.recordedAt),
                "recorded": Self.time(e.recordedAt),
                "type": e.type, "stream": e.stream, "size": e.payloadSize.map(String.init) ?? "—", "hash": String(e.hash.prefix(12)),
                "previous": String(e.previousHash.prefix(12))
            ] as [String: Any]
        }
        if let event {
            var fields: [(String, String)] = [
                ("seq", String(event.seq)), ("recorded", Self.iso(event.recordedAt)), ("type", event.type), ("stream", event.stream), ("id", event.id),
                ("schema version", String(event.schemaVersion)), ("hash", event.hash), ("previous hash", event.previousHash),
                ("payload size", event.payloadSize.map(String.init) ?? "none"), ("payload SHA-256", event.payloadSHA256 ?? "none")
            ]
            fields += event.metadata.map { ("metadata: " + $0.path, $0.value) }
            content["event"] = ["seq": event.seq, "fields": fields.map { ["path": $0.0, "value": $0.1] }] as [String: Any]
        }
        if let older { content["older"] = older }
        return render("log", chrome, content)
    }

    // MARK: Schema

    package func schema(_ schema: SourceSchema, drift: [SchemaDrift], asOf: String?, chrome: Chrome) -> String {
        let name = schema.source
        let fields: [[String: Any]] = schema.fields.map { f in
            [
                "path": f.path, "types": f.typeNames.map { "\($0) (\(f.types[$0] ?? 0))" }.joined(separator: ", "), "items": f.items, "first": f.firstSeq,
                "changed": f.lastChangedSeq, "example": f.examples.sorted { $0.key < $1.key }.first.map { String($0.value.displayText.prefix(80)) } ?? ""
            ]
        }
        let rows: [[String: Any]] = drift.map { d in
            [
                "seq": d.seq, "link": Links.source(name, asOf: String(d.seq)), "iso": Self.iso(d.observedAt), "observed": Self.time(d.observedAt),
                "kind": d.kind.rawValue, "path": d.path, "before": d.before.joined(separator: "|"), "after": d.after.joined(separator: "|"), "items": d.items
            ]
        }
        return render(
            "schema", chrome,
            [
                "source": name, "sourceLink": Links.source(name, asOf: asOf), "items": schema.items, "details": schema.details, "seq": schema.seq,
                "fields": fields, "drift": rows, "hasDrift": !rows.isEmpty
            ])
    }

    // MARK: Alerts

    package func alerts(_ summaries: [AlertSummary], selected: (name: String, source: String, notes: [AlertNotification])?, chrome: Chrome) -> String {
        let rows: [[String: Any]] = summaries.map { s in
            let a = s.alert
            var on = a.kinds.map(\.rawValue).sorted().joined(separator: ", ")
            if let c = a.condition { on += " when " + c.description }
            if !a.fields.isEmpty { on += " touching " + a.fields.joined(separator: ", ") }
            if a.onDrift { on += ", drift" }
            // Where it goes, without what a URL's path or a command may hold (tokens).
            let target: String =
                switch a.target {
                case .webhook(let url): "webhook to " + (url.host ?? "?")
                case .exec: "a command"
                }
            return [
                "name": a.name, "source": a.source, "sourceLink": Links.source(a.source, asOf: nil), "on": on, "target": target, "queued": s.queued,
                "delivered": s.delivered, "pending": s.pending, "failed": s.failed,
                "link": Links.query("/_strata/ui/alerts", [("source", a.source), ("name", a.name)])
            ]
        }
        var content: [String: Any] = ["rows": rows, "hasRows": !rows.isEmpty]
        if let selected {
            content["selected"] =
                [
                    "name": selected.source + "/" + selected.name,
                    "notes": selected.notes.map { n in
                        [
                            "kind": n.kind, "title": n.title, "seq": n.seq, "iso": Self.iso(n.observedAt), "observed": Self.time(n.observedAt), "id": n.id,
                            "link": Links.item(n.source, n.item, asOf: nil) + "#v\(n.seq)"
                        ] as [String: Any]
                    }
                ] as [String: Any]
        }
        return render("alerts", chrome, content)
    }

    // MARK: Recorded exchanges

    /// One exchange as a page shows it: from its event's metadata (headers are stored masked)
    /// and its body.
    package struct ExchangeView: Sendable {
        package var entry: LogEntry
        package var body: [UInt8]?
        /// The previous exchange of the same method and URL, when there is one.
        package var previous: UInt64?
        /// The field changes of its JSON body against another exchange's (`compare=`).
        package var compare: (against: UInt64, changes: [Change])?
        package init(entry: LogEntry, body: [UInt8]?, previous: UInt64?, compare: (against: UInt64, changes: [Change])?) {
            self.entry = entry; self.body = body; self.previous = previous; self.compare = compare
        }
    }

    package func exchanges(source: String, entries: [LogEntry], exchange: ExchangeView?, older: String?, chrome: Chrome) -> String {
        let base = "/_strata/ui/sources/\(Links.segment(source))/exchanges"
        func meta(_ e: LogEntry, _ key: String) -> String? { e.metadata.first { $0.path == key }?.value }
        var content: [String: Any] = [
            "source": source, "sourceLink": Links.source(source, asOf: nil), "har": base + ".har", "warc": base + ".warc"
        ]
        content["rows"] = entries.map { e in
            [
                "seq": e.seq, "link": Links.query(base, [("seq", String(e.seq))]), "iso": Self.iso(e.recordedAt), "observed": Self.time(e.recordedAt),
                "method": meta(e, "method") ?? "", "url": meta(e, "url") ?? "", "status": meta(e, "status") ?? (e.type == "ExchangeFailed" ? "failed" : "")
            ] as [String: Any]
        }
        if let x = exchange {
            let e = x.entry
            func headers(_ key: String) -> [[String: Any]] {
                guard let text = meta(e, key), case .array(let list)? = try? JSONValue(parsing: Array(text.utf8)) else { return [] }
                return list.compactMap { pair in
                    guard case .array(let nv) = pair, nv.count == 2 else { return nil }
                    return ["path": nv[0].displayText, "value": nv[1].displayText]
                }
            }
            var view: [String: Any] = [
                "seq": e.seq, "iso": Self.iso(e.recordedAt), "observed": Self.time(e.recordedAt), "method": meta(e, "method") ?? "",
                "url": meta(e, "url") ?? "", "status": meta(e, "status") ?? "none", "requestHeaders": headers("requestHeaders"),
                "responseHeaders": headers("responseHeaders")
            ]
            if let digest = meta(e, "requestBody") { view["requestBody"] = digest }
            if let body = x.body {
                // JSON pretty-printed, text as it is, anything else by its size; at most 256 KiB.
                if let json = try? JSONValue(parsing: body) {
                    let text = json.prettyString
                    view["body"] = text.count > 262_144 ? String(text.prefix(262_144)) + "\n…" : text
                } else if let text = String(validating: body.prefix(262_144), as: UTF8.self) {
                    view["body"] = body.count > 262_144 ? text + "\n…" : text
                } else {
                    view["bodyNote"] = "\(body.count) bytes, not text"
                }
            } else {
                view["bodyNote"] = "Recorded without a body."
            }
            if let p = x.previous { view["previous"] = Links.query(base, [("seq", String(e.seq)), ("compare", String(p))]) }
            if let c = x.compare {
                view["compare"] = ["against": c.against, "changes": c.changes.map(Self.changeRow), "hasChanges": !c.changes.isEmpty] as [String: Any]
            }
            content["exchange"] = view
        }
        if let older { content["older"] = older }
        return render("exchanges", chrome, content)
    }

    // MARK: Text

    /// `2026-03-01 09:00:00 UTC`. By hand: a date formatter is built per call otherwise, and
    /// building one cost more than the rest of a page of 200 changes.
    static func time(_ d: Date) -> String {
        let (date, clock) = civil(d)
        return date + " " + clock + " UTC"
    }

    /// `2026-03-01T09:00:00Z`.
    static func iso(_ d: Date) -> String {
        let (date, clock) = civil(d)
        return date + "T" + clock + "Z"
    }

    /// The UTC calendar date and clock time of `d`, to the second (days to civil date after
    /// Howard Hinnant's `civil_from_days`).
    static func civil(_ d: Date) -> (date: String, clock: String) {
        let t = d.timeIntervalSince1970
        guard t.isFinite, abs(t) < 1e13 else { return ("????-??-??", "??:??:??") }
        let secs = Int64(t.rounded(.down))
        let days = secs >= 0 ? secs / 86_400 : (secs - 86_399) / 86_400
        let rem = secs - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let y = year >= 0 && year < 10_000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return ("\(y)-\(two(month))-\(two(day))", "\(two(rem / 3_600)):\(two(rem % 3_600 / 60)):\(two(rem % 60))")
    }

    /// The value of a `datetime-local` field: UTC, to the second.
    static func localDate(_ d: Date) -> String { String(iso(d).dropLast()) }
}
