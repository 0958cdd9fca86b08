package import Foundation
package import StrataDomain
import StrataJSON

/// Times as people read them in a terminal: `2026-11-22 10:04:05Z`, always UTC so output is
/// the same everywhere.
package enum TimeText {
    /// `2026-11-22 10:04:05Z`: UTC, the second the time falls in. With `gmtime_r`, because
    /// Foundation's first Calendar and `String(format:)` are a measurable part of a command's
    /// start.
    package static func format(_ date: Date) -> String {
        let c = ISOTime.utc(Int64(date.timeIntervalSince1970.rounded(.down)))
        let pad = ISOTime.pad
        return "\(pad(Int(c.tm_year) + 1900, 4))-\(pad(Int(c.tm_mon) + 1, 2))-\(pad(Int(c.tm_mday), 2)) "
            + "\(pad(Int(c.tm_hour), 2)):\(pad(Int(c.tm_min), 2)):\(pad(Int(c.tm_sec), 2))Z"
    }
}

extension SourceViewData {
    package init(source s: Source) {
        let freshness: Freshness
        switch (s.lastRun, s.lastSuccess) {
        case (nil, _): freshness = .never
        case (let run?, let good) where !run.succeeded:
            if case .failed(let message) = run.outcome {
                freshness = .failed(at: TimeText.format(run.at), error: message, lastGood: good.map { TimeText.format($0.at) })
            } else {
                freshness = .never
            }
        case (let run?, _): freshness = .fetched(at: TimeText.format(run.at), seq: run.seq)
        }
        self.init(name: s.name, url: s.url, freshness: freshness, indexedFields: s.indexPaths)
    }

    /// "last fetched 2026-11-22 10:04:05Z (seq 42)", or what failed and what is shown instead;
    /// the way to a first fetch as `wording` offers it.
    package func stalenessText(_ wording: FrontEndWording) -> String {
        switch freshness {
        case .never: wording.sentence("\(name): never fetched", .fetch(source: name))
        case .fetched(let at, let seq): "\(name): last fetched \(at) (seq \(seq))"
        case .failed(let at, let error, let good):
            "\(name): last fetch failed \(at): \(error); " + (good.map { "showing data fetched \($0)" } ?? "nothing stored yet")
        }
    }
}

extension ItemRowViewData {
    package init(item: Item) {
        self.init(
            id: item.id.displayLine, title: item.title.displayLine, subtitle: item.subtitle.joined(separator: " · ").displayLine,
            fields: item.fields.map(\.value.displayLine),
            picture: item.imageURL ?? item.image?.url ?? "-", isRemoved: item.isRemoved, pending: item.pending.marker)
    }
}

extension PendingState {
    /// The word a list row or a detail shows: "pending", "conflict", or nil.
    package var marker: String? {
        switch self {
        case .none: nil
        case .pending: "pending"
        case .conflicted: "conflict"
        }
    }
}

extension ItemListViewData {
    package init(source: Source, page: ItemPage, offset: Int) {
        self.init(
            source: SourceViewData(source: source), columns: source.indexPaths, rows: page.items.map(ItemRowViewData.init(item:)),
            total: page.total, offset: offset, asOf: page.seq.map { "seq \($0)" }, usedIndex: page.usedIndex)
    }
}

extension ItemDetailViewData {
    package init(source: Source, item: Item, asOf: UInt64?, refreshError: String?) {
        var status = "v\(item.version) · first seen seq \(item.firstSeq) · changed seq \(item.changedSeq)"
        if item.isRemoved { status += " · removed" }
        if let m = item.pending.marker { status += " · \(m) (local writes the server has not confirmed yet; they wait in the outbox)" }
        var fields = (item.detail ?? item.document).flattened()
        if item.detail != nil {
            // List fields the detail lacks still matter (e.g. the list's price).
            let have = Set(fields.map(\.label))
            fields += item.document.flattened().filter { !have.contains($0.label) }
        }
        fields = fields.map { LabeledValue($0.label.displayLine, $0.value.displayText) }
        self.init(
            source: SourceViewData(source: source), id: item.id.displayLine, title: item.title.displayLine,
            subtitle: item.subtitle.joined(separator: " · ").displayLine,
            status: status, fields: fields, picture: (item.imageURL ?? item.image?.url ?? "-").displayLine, isRemoved: item.isRemoved,
            asOf: asOf.map { "seq \($0)" }, refreshError: refreshError)
    }
}

extension ChangeViewData {
    package init(change c: Change) {
        let mark: Mark =
            switch c.kind {
            case .added: .added;
            case .removed: .removed;
            case .replaced: .replaced
            }
        self.init(mark: mark, path: c.path.displayLine, old: c.old.map(\.shortText.displayLine), new: c.new.map(\.shortText.displayLine))
    }
}

extension Change {
    /// Back from the view: text values are parsed as JSON where they are JSON, else kept as strings.
    package init(viewData v: ChangeViewData) {
        let kind: Kind =
            switch v.mark {
            case .added: .added;
            case .removed: .removed;
            case .replaced: .replaced
            }
        func value(_ text: String?) -> JSONValue? {
            guard let text else { return nil }
            return (try? JSONValue(parsing: text)) ?? .string(text)
        }
        self.init(kind: kind, path: v.path, old: value(v.old), new: value(v.new))
    }
}

extension VersionViewData {
    package init(version v: ItemVersion) {
        self.init(
            version: v.version, seq: v.seq, time: TimeText.format(v.recordedAt), kind: v.kind.rawValue,
            run: v.run.map { String($0.prefix(8)) } ?? "-", changes: v.changes.map(ChangeViewData.init(change:)),
            origin: v.origin.rawValue, backfilled: v.backfilled,
            local: v.local.map { "by \($0.user) · \($0.kind.rawValue) · \($0.answer)" }, restored: v.restored)
    }
}

extension HistoryViewData {
    package init(source: Source, id: String, versions: [ItemVersion]) {
        let title = source.titlePath.flatMap { path in versions.reversed().lazy.compactMap { $0.document.value(atPath: path)?.shortText }.first } ?? id
        self.init(source: SourceViewData(source: source), id: id, title: title, versions: versions.map(VersionViewData.init(version:)))
    }
}

extension DiffItemViewData {
    package init(diff d: ItemDiff) {
        let mark =
            switch d.kind {
            case .added: "+";
            case .removed: "-";
            case .changed: "~";
            case .reappeared: "↺"
            }
        self.init(mark: mark, id: d.id, title: d.title, changes: d.changes.map(ChangeViewData.init(change:)))
    }
}

extension DiffViewData {
    package init(source: Source, diff: CollectionDiff) {
        let summary = ChangeKind.allCases.map { "\(diff.count($0)) \($0.rawValue)" }.joined(separator: ", ")
        self.init(
            source: SourceViewData(source: source), from: diff.fromSeq, to: diff.toSeq, summary: summary,
            items: diff.items.map(DiffItemViewData.init(diff:)))
    }
}

extension EventViewData {
    /// Metadata keys worth a glance, in this order; the rest is in `--format json`.
    static let summaryKeys = ["source", "key", "collection", "page", "status", "items", "pages", "complete", "stage", "error", "url"]

    package init(entry e: LogEntry) {
        let summary = Self.summaryKeys.compactMap { k in e[metadata: k].map { "\(k)=\($0)" } }.joined(separator: " ")
        self.init(
            seq: e.seq, time: TimeText.format(e.recordedAt), type: e.type, stream: e.stream, summary: summary,
            size: e.payloadSize.map(ByteText.format) ?? "-", hash: String(e.hash.prefix(12)), isFailure: e.isFailure)
    }
}

/// Sizes as people read them.
enum ByteText {
    static func format(_ n: Int) -> String {
        let v = Double(n)
        switch v {
        case ..<1024: return "\(n) B"
        case ..<(1024 * 1024): return String(format: "%.1f KiB", v / 1024)
        default: return String(format: "%.1f MiB", v / 1024 / 1024)
        }
    }
}

extension JSONValue {
    /// A scalar's text (strings unquoted); containers as compact JSON cut at 80 characters.
    var shortText: String {
        switch self {
        case .string(let s): return s
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .array, .object:
            let text = canonicalString
            return text.count > 80 ? String(text.prefix(79)) + "…" : text
        }
    }

    /// Every scalar as a dotted path and its text, in key order; empty containers as `[]`/`{}`.
    func flattened(prefix: String = "") -> [LabeledValue] {
        switch self {
        case .object(let o):
            if o.isEmpty { return prefix.isEmpty ? [] : [LabeledValue(prefix, "{}")] }
            return JSONValue.sortedMembers(o).flatMap { m in m.value.flattened(prefix: prefix.isEmpty ? m.key : prefix + "." + m.key) }
        case .array(let a):
            if a.isEmpty { return [LabeledValue(prefix, "[]")] }
            return a.enumerated().flatMap { i, v in v.flattened(prefix: prefix.isEmpty ? String(i) : prefix + "." + String(i)) }
        default:
            return [LabeledValue(prefix.isEmpty ? "value" : prefix, shortText)]
        }
    }
}

extension PointInTime {
    /// Parses what a user types for `--as-of`: a seq, or an ISO 8601 date (`2026-01-31`) or
    /// date-time (`2026-01-31T10:00:00Z`, fractions allowed). nil for anything else.
    package init?(text: String) {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let seq = UInt64(t) { self = .seq(seq); return }
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate]] {
            let f = ISO8601DateFormatter()
            f.formatOptions = options
            if let d = f.date(from: t) { self = .date(d); return }
        }
        return nil
    }

    /// Parses an option's text; nil text is now.
    /// - Throws: ``PresentableError`` `invalidInput` naming the option.
    static func parse(
        _ text: String?, option: String, quoting: (String, String) -> String
    ) throws(PresentableError) -> PointInTime {
        guard let text else { return .now }
        guard let point = PointInTime(text: text) else {
            throw PresentableError(kind: .invalidInput, message: "\(quoting(option, text)) is neither a seq nor an ISO 8601 date like 2026-01-31T10:00:00Z")
        }
        return point
    }

    /// The text form: a seq, an ISO 8601 date-time, or nil for now.
    package var text: String? {
        switch self {
        case .now: return nil
        case .seq(let s): return String(s)
        case .date(let d):
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return f.string(from: d)
        }
    }
}

extension ItemQuery {
    /// The query a filter's text describes.
    /// - Throws: ``PresentableError`` `invalidInput` naming the bad part.
    /// `naming` words the problems as the front end names its inputs: the CLI's flags, the
    /// server's query parameters.
    package init(source: String, filter f: FilterViewData, naming: FilterInputNames) throws(PresentableError) {
        var filters: [FieldFilter] = []
        var expressions: [ItemExpression] = []
        for w in f.wheres {
            // `PATH=VALUE` as it always was; anything else is an expression.
            if let legacy = FieldFilter(legacy: w) {
                filters.append(legacy)
                continue
            }
            expressions.append(try ItemExpression.filter(w, naming: naming, input: naming.where_))
        }
        var sort: ItemSort?
        if let s = f.sort, !s.isEmpty {
            sort = s.hasPrefix("-") ? ItemSort(path: String(s.dropFirst()), descending: true) : ItemSort(path: s)
            if sort!.path.isEmpty { throw PresentableError(kind: .invalidInput, message: "\(naming.sort) needs a path, e.g. price or -price") }
        }
        if let l = f.limit, l < 1 { throw PresentableError(kind: .invalidInput, message: "\(naming.limit) must be at least 1") }
        guard f.offset >= 0 else { throw PresentableError(kind: .invalidInput, message: "\(naming.offset) must not be negative") }
        let at = try PointInTime.parse(f.asOf, option: naming.asOf, quoting: naming.quoting)
        self.init(source: source, filters: filters, search: f.search, sort: sort, limit: f.limit, offset: f.offset, at: at)
        self.expressions = expressions
    }
}

extension ItemExpression {
    /// A filter's expression (`--where`, `--when`), its problems worded with the input's name:
    /// the position and what was expected, as every command that takes one says them.
    /// - Throws: ``PresentableError`` `invalidInput`.
    package static func filter(_ text: String, naming: FilterInputNames, input: String) throws(PresentableError) -> ItemExpression {
        let e: ItemExpression
        do { e = try ItemExpression(parsing: text) } catch {
            throw PresentableError(
                kind: .invalidInput, message: "\(naming.quoting(input, String(text.prefix(200)))) is not valid at \(error.position): \(error.message)")
        }
        guard !e.isBarePath else {
            throw PresentableError(
                kind: .invalidInput,
                message:
                    "\(naming.quoting(input, text)) names a field but no condition on it: compare it, e.g. make = \"Toyota\", price < 10000 or \(text) = true")
        }
        return e
    }
}

extension FilterViewData {
    /// The text form of a query.
    package init(query q: ItemQuery) {
        self.init(
            wheres: q.filters.map { "\($0.path)=\($0.value)" } + q.expressions.map(\.text), search: q.search,
            sort: q.sort.map { ($0.descending ? "-" : "") + $0.path }, limit: q.limit, offset: q.offset, asOf: q.at.text)
    }
}

extension PresentableError {
    package init(_ error: any Error) {
        if let e = error as? PresentableError { self = e; return }
        if let e = error as? RepositoryError {
            let kind: Kind =
                switch e.code {
                case .notFound: .notFound
                case .invalidQuery: .invalidInput
                case .network: .network
                case .conflict: .conflict
                default: .storage
                }
            self.init(kind: kind, message: e.message)
            next = e.next
            return
        }
        if let e = error as? SpecProblem {
            self.init(kind: .invalidInput, message: e.description)
            spec = e
            return
        }
        self.init(kind: .storage, message: "\(error)")
    }
}

extension FilterViewData {
    /// What `list` says on stderr when a filter or sort names a field that is not indexed (the
    /// read scans every item): the fields, and the `--index` that would avoid it (the source's
    /// indexed fields plus these, since `--index` replaces the set). nil when nothing scans for
    /// that reason.
    /// `sortedIndex` false (an encrypted store): a sort on an indexed field scans too, and the
    /// note says why.
    /// `usedIndex`: an index answered one filter, so only the items it found were read.
    package func scanNote(
        source: String, indexed: [String], sortedIndex: Bool = true, usedIndex: Bool = false, wording: FrontEndWording
    ) -> String? {
        var paths = wheres.flatMap { w -> [String] in
            if let legacy = FieldFilter(legacy: w) { return [legacy.path] }
            return (try? ItemExpression(parsing: w))?.paths ?? []
        }
        let sortPath = sort.map { $0.hasPrefix("-") ? String($0.dropFirst()) : $0 }
        if let sortPath { paths.append(sortPath) }
        var seen = Set(indexed)
        let missing = paths.filter { !$0.isEmpty && seen.insert($0).inserted }
        if missing.isEmpty, !sortedIndex, let sortPath, indexed.contains(sortPath) {
            return "note: an encrypted store keeps no sorted index (its keys would hold the values), so sorting by `\(sortPath)` read every item of \(source)"
        }
        guard !missing.isEmpty else { return nil }
        let fields = missing.map { "`\($0)`" }.joined(separator: ", ")
        let read =
            usedIndex
            ? "each item the index found was read to \(sortPath.map(missing.contains) == true ? (missing.count == 1 ? "sort it" : "check and sort it") : "check it")"
            : "every item of \(source) was read"
        return wording.sentence(
            "note: \(fields) \(missing.count == 1 ? "is" : "are") not indexed, so \(read)", .indexFields(source: source, fields: indexed + missing))
    }
}
