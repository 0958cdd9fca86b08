import Foundation
import StrataDomain
import StrataJSON
import StrataPresentation

/// In-memory repositories behind the domain's protocols: the items of one source, versions by
/// seq, and switches to make the network fail.
final class MemoryRepositories: ItemRepository, SourceRepository, RemoteRepository, EventLogRepository, @unchecked Sendable {
    private let lock = NSLock()
    var source: Source
    /// (seq, items present after it)
    var snapshots: [(UInt64, [Item])]
    var histories: [String: [ItemVersion]] = [:]
    var details: [String: JSONValue] = [:]
    var images: [String: [UInt8]] = [:]
    var entries: [LogEntry] = []
    var networkError: RepositoryError?
    /// How long a list read takes (a slow disk, a large source).
    var queryDelay: Duration?
    private(set) var detailRequests: [String] = []
    private(set) var refreshes = 0

    init(source: Source, snapshots: [(UInt64, [Item])]) {
        self.source = source
        self.snapshots = snapshots
    }

    private func items(at point: PointInTime) throws -> [Item] {
        let seq = try resolveSync(point)
        return snapshots.last { $0.0 <= seq }?.1 ?? []
    }

    private func resolveSync(_ point: PointInTime) throws -> UInt64 {
        let head = snapshots.last?.0 ?? 0
        switch point {
        case .now: return head
        case .seq(let s):
            guard s <= head else { throw RepositoryError(.invalidQuery, "seq \(s) is after the newest event (\(head))") }
            return s
        case .date: return head
        }
    }

    func items(_ query: ItemQuery) async throws -> ItemPage {
        if let queryDelay { try await Task.sleep(for: queryDelay) }
        guard query.source == source.name else { throw RepositoryError(.notFound, "no source named \(query.source)") }
        var list = try lock.withLock { try items(at: query.at) }
        list = list.filter { item in query.filters.allSatisfy { f in item.fields.contains { $0.path == f.path && $0.value == f.value } } }
        list = list.filter { item in query.expressions.allSatisfy { $0.matches(item.merged) } }
        if let s = query.search?.lowercased() { list = list.filter { $0.title.lowercased().contains(s) } }
        let total = list.count
        if let after = query.after, let i = list.firstIndex(where: { $0.id == after }) { list = Array(list[(i + 1)...]) }
        let page = Array(list.dropFirst(query.after == nil ? query.offset : 0).prefix(query.limit ?? .max))
        return ItemPage(items: page, total: total, seq: query.at == .now ? nil : try resolveSync(query.at), usedIndex: !query.filters.isEmpty)
    }

    func count(_ query: ItemQuery, by paths: [String]) async throws -> (counts: [ItemCount], usedIndex: Bool) {
        var q = query
        q.limit = nil
        q.offset = 0
        let page = try await items(q)
        return ([ItemCount(values: [], count: page.total)], page.usedIndex)
    }

    func item(source: String, id: String, at point: PointInTime) async throws -> Item? {
        try lock.withLock {
            guard var item = try items(at: point).first(where: { $0.id == id }) else { return nil }
            item.detail = details[id]
            return item
        }
    }

    func history(source: String, id: String, upTo point: PointInTime) async throws -> [ItemVersion] {
        let seq = try resolveSync(point)
        return (histories[id] ?? []).filter { $0.seq <= seq }
    }

    func changes(
        source: String, after: UInt64, upTo: UInt64, kinds: Set<ChangeKind>, matching: @escaping @Sendable (JSONValue?, JSONValue?) -> Bool
    ) -> AsyncThrowingStream<[ItemChange], any Error> {
        // Every item's versions in the span, in seq order: what a walk of the log gives.
        var out: [ItemChange] = []
        for (id, versions) in histories {
            var previous: JSONValue?
            for v in versions.sorted(by: { $0.seq < $1.seq }) where v.seq <= upTo {
                let now: JSONValue? = v.kind == .removed ? nil : v.document
                defer { previous = now ?? previous }
                guard v.seq > after, kinds.contains(v.kind) else { continue }
                let before = v.kind == .added || v.kind == .reappeared ? nil : previous
                guard matching(now, before) else { continue }
                out.append(
                    ItemChange(
                        item: id, title: id, seq: v.seq, observedAt: v.recordedAt, kind: v.kind, changes: v.changes, after: now, before: before))
            }
        }
        out.sort { $0.seq != $1.seq ? $0.seq < $1.seq : $0.item < $1.item }
        return AsyncThrowingStream {
            $0.yield(out); $0.finish()
        }
    }

    func diff(source: String, from: PointInTime, to: PointInTime) async throws -> CollectionDiff {
        let a = try resolveSync(from), b = try resolveSync(to)
        let before = Dictionary(uniqueKeysWithValues: try items(at: from).map { ($0.id, $0) })
        let after = Dictionary(uniqueKeysWithValues: try items(at: to).map { ($0.id, $0) })
        var out: [ItemDiff] = []
        for id in Set(before.keys).union(after.keys).sorted() {
            switch (before[id], after[id]) {
            case (nil, let n?): out.append(ItemDiff(id: id, title: n.title, kind: .added, changes: []))
            case (let o?, nil): out.append(ItemDiff(id: id, title: o.title, kind: .removed, changes: []))
            case (let o?, let n?) where o.document != n.document:
                out.append(
                    ItemDiff(
                        id: id, title: n.title, kind: .changed,
                        changes: [Change(kind: .replaced, path: "/price", old: o.document.value(atPath: "price"), new: n.document.value(atPath: "price"))]))
            default: break
            }
        }
        return CollectionDiff(source: source, fromSeq: a, toSeq: b, items: out)
    }

    func imageData(_ image: ItemImage) async throws -> [UInt8]? { images[image.sha256] }

    func sources() async throws -> [Source] { [source] }

    func source(named name: String) async throws -> Source {
        guard name == source.name else { throw RepositoryError(.notFound, "no source named \(name); known: \(source.name)") }
        return source
    }

    func refresh(source: String, request: RefreshRequest) async throws -> RefreshResult {
        lock.withLock { refreshes += 1 }
        if let networkError { throw networkError }
        return RefreshResult(source: source, run: "run-2", pages: 1, added: 1, changed: 2, removed: 0)
    }

    func loadDetail(source: String, id: String) async throws {
        lock.withLock { detailRequests.append(id) }
        if let networkError { throw networkError }
        details[id] = .object(["id": .string(id), "specs": .object(["km": .number("1200"), "fuel": .string("petrol")])])
    }

    func entries(_ query: LogQuery) async throws -> [LogEntry] {
        let filtered = entries.filter { $0.seq >= query.fromSeq && $0.seq <= query.toSeq }
        return Array((query.newestFirst ? filtered.reversed() : filtered).prefix(query.limit))
    }

    func resolve(_ point: PointInTime) async throws -> UInt64 { try resolveSync(point) }
    func body(sha256: String) async throws -> [UInt8]? { nil }
    func shownPayload(of entry: LogEntry) async throws -> [UInt8]? { nil }
}

/// A fixed, deterministic scene: a cars source fetched twice.
enum Scene {
    static let t0 = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    static let source = Source(
        name: "cars", url: "http://api.example/cars", titlePath: "model", subtitlePaths: ["make", "price"], imagePath: "image",
        indexPaths: ["make", "fuel"], hasDetails: true,
        lastRun: FetchRun(id: "run-2", seq: 12, at: t0.addingTimeInterval(3600), outcome: .completed(complete: true), pages: 1),
        lastSuccess: FetchRun(id: "run-2", seq: 12, at: t0.addingTimeInterval(3600), outcome: .completed(complete: true), pages: 1))

    static func car(_ id: Int, _ make: String, _ model: String, _ price: Int, fuel: String = "petrol", removed: Bool = false, image: Bool = false) -> Item {
        Item(
            source: "cars", id: String(id), title: model, subtitle: [make, String(price)],
            fields: [Field(path: "make", value: make), Field(path: "fuel", value: fuel)],
            document: .object(["id": .number(String(id)), "make": .string(make), "model": .string(model), "price": .number(String(price))]),
            imageURL: "http://api.example/cars/images/\(id).png",
            image: image ? ItemImage(url: "http://api.example/cars/images/\(id).png", sha256: "sha-\(id)", size: 3, contentType: "image/png") : nil,
            version: 1, firstSeq: 3, changedSeq: 3, isRemoved: removed)
    }

    static let v1: [Item] = [
        car(1, "Volkswagen", "Passat", 11500), car(2, "Toyota", "Yaris", 9150, fuel: "hybrid"),
        car(3, "Toyota", "RAV4", 12300, image: true)
    ]
    static let v2: [Item] = [
        car(2, "Toyota", "Yaris", 8750, fuel: "hybrid"), car(3, "Toyota", "RAV4", 12300, image: true),
        car(4, "Škoda", "Octavia with a very long model name that will not fit a narrow terminal", 13750)
    ]

    static func repositories() -> MemoryRepositories {
        let r = MemoryRepositories(source: source, snapshots: [(5, v1), (12, v2)])
        r.histories["2"] = [
            ItemVersion(version: 1, seq: 4, recordedAt: t0, kind: .added, run: "0f1e2d3c-aaaa", eventType: "CollectionPageFetched", document: v1[1].document),
            ItemVersion(
                version: 2, seq: 11, recordedAt: t0.addingTimeInterval(3600), kind: .changed, run: "9a8b7c6d-bbbb", eventType: "CollectionPageFetched",
                changes: [
                    Change(kind: .replaced, path: "/price", old: .number("9150"), new: .number("8750")),
                    Change(kind: .added, path: "/tags", new: .array([.string("new tyres")])),
                    Change(kind: .removed, path: "/rating", old: .number("4.1"))
                ],
                document: v2[0].document)
        ]
        r.images["sha-3"] = [1, 2, 3]
        r.entries = [
            LogEntry(
                seq: 1, recordedAt: t0, type: "SourceDefined", stream: "cars", metadata: [Field(path: "source", value: "cars")], payloadSize: 420,
                hash: String(repeating: "ab", count: 32)),
            LogEntry(
                seq: 2, recordedAt: t0.addingTimeInterval(1), type: "CollectionPageFetched", stream: "cars",
                metadata: [
                    Field(path: "source", value: "cars"), Field(path: "page", value: "1"), Field(path: "status", value: "200"),
                    Field(path: "url", value: "http://api.example/cars?page=1")
                ],
                payloadSize: 7_900, hash: String(repeating: "cd", count: 32)),
            LogEntry(
                seq: 3, recordedAt: t0.addingTimeInterval(2), type: "FetchFailed", stream: "cars",
                metadata: [Field(path: "source", value: "cars"), Field(path: "stage", value: "detail"), Field(path: "error", value: "http")],
                payloadSize: nil, hash: String(repeating: "ef", count: 32))
        ]
        return r
    }
}

/// Draws a box of `#` in place of a picture: deterministic thumbnails for goldens.
struct BoxRenderer: ImageRenderer {
    func render(_ bytes: [UInt8], columns: Int, rows: Int) -> [String]? {
        Array(repeating: String(repeating: "#", count: columns), count: rows)
    }
}
