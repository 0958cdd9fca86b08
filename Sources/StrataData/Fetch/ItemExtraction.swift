public import EventStore

/// Finds the items of a list body and their ids, rejecting bodies Strata must not store as a
/// page: malformed JSON, a missing items path, the wrong JSON type, items without an id and
/// duplicate ids.
public struct ItemExtraction: Sendable {
    public var itemsPath: String?
    public var idPaths: [String]

    public init(itemsPath: String?, idPaths: [String]) {
        self.itemsPath = itemsPath
        self.idPaths = idPaths
    }

    public init(_ source: SourceDefinition) { self.init(itemsPath: source.items, idPaths: source.id) }

    /// The metadata that lets the items projection repeat this extraction from the event alone.
    public var metadata: [(key: String, value: String)] {
        [("items", itemsPath ?? ""), ("id", idPaths.joined(separator: ","))]
    }

    public init(metadataOf event: RecordedEvent) {
        let items = event[metadata: "items"] ?? ""
        self.init(itemsPath: items.isEmpty ? nil : items, idPaths: (event[metadata: "id"] ?? "id").split(separator: ",").map(String.init))
    }

    /// The parsed body and its items, in order, keyed by id.
    public func items(in body: [UInt8], url: String) throws(FetchError) -> (document: JSONValue, items: [(key: String, item: JSONValue)]) {
        let doc: JSONValue
        do { doc = try JSONValue(parsing: body) } catch {
            throw FetchError(code: .malformedJSON, message: "the response is not valid JSON (\(error))", url: url)
        }
        let container: JSONValue
        if let itemsPath {
            guard let v = doc.value(atPath: itemsPath) else {
                if case .object = doc {
                } else {
                    throw FetchError(code: .wrongType, message: "expected a JSON object holding '\(itemsPath)', got \(doc.kindName)", url: url)
                }
                throw FetchError(code: .itemsPath, message: "the response has no '\(itemsPath)'", url: url, subject: .field("items"))
            }
            container = v
        } else {
            container = doc
        }
        var out: [(String, JSONValue)] = []
        var seen = Set<String>()
        switch container {
        case .array(let list):
            guard idPaths != ["@key"] else {
                throw FetchError(
                    code: .wrongType, message: "an id of @key needs the items to be an object keyed by id, but they are an array", url: url,
                    subject: .field("id"))
            }
            for (i, item) in list.enumerated() {
                let key = try id(of: item, index: i, url: url)
                guard seen.insert(key).inserted else {
                    throw FetchError(code: .duplicateIds, message: "two items have the id '\(key.prefix(80))'", url: url, subject: .field("id"))
                }
                out.append((key, item))
            }
        case .object(let map) where idPaths == ["@key"]:
            for m in JSONValue.sortedMembers(map) { out.append((m.key, m.value)) }
        case .object:
            throw FetchError(
                code: .wrongType, message: "the items are an object, not an array: an object map takes the id @key, or the items path points at the array",
                url: url,
                subject: .field("id"))
        default:
            throw FetchError(
                code: .wrongType, message: "expected an array of items\(itemsPath.map { " at '\($0)'" } ?? ""), got \(container.kindName)", url: url)
        }
        return (doc, out)
    }

    /// The items of a list body, in order, keyed by id, each as its canonical JSON: the answer of
    /// ``items(in:url:)`` (and its errors) with each item's `canonicalBytes`, worked out from the
    /// text with no tree when the body is ordinary. An import checks every snapshot with it
    /// before it is stored.
    /// `range`: where the item's text is in `body`, when the body was ordinary (nil when the
    /// items were found in the tree).
    public func canonicalItems(in body: [UInt8], url: String) throws(FetchError) -> [CanonicalItem] {
        if let spans = scan(body) {
            let items: [CanonicalItem]? = body.withUnsafeBytes { raw in
                var out: [CanonicalItem] = []
                out.reserveCapacity(spans.count)
                for s in spans {
                    guard let c = try? JSONValue.canonicalize(UnsafeRawBufferPointer(rebasing: raw[s.range])) else { return nil }
                    out.append((s.key, c, s.range))
                }
                return out
            }
            if let items { return items }
        }
        return try items(in: body, url: url).items.map { ($0.key, $0.item.canonicalBytes, nil) }
    }

    /// An item of a list body: its id, its canonical JSON and where its text is in the body.
    public typealias CanonicalItem = (key: String, canonical: [UInt8], range: Range<Int>?)

    /// A page's items as the folds take them: each item's canonical JSON and its digest (the
    /// first 16 bytes of its SHA-256), which the items projection compares with the present
    /// version and the schema keeps.
    typealias PageItems = [(key: String, canonical: [UInt8], digest: [UInt8], range: Range<Int>?)]

    /// ``canonicalItems(in:url:)`` of a page event's body with their digests, worked out once
    /// per batch for every projection that folds the page (the items, the schema).
    static func pageItems(_ event: RecordedEvent, body: [UInt8], _ ctx: ProjectionContext) throws -> PageItems {
        let extraction = ItemExtraction(metadataOf: event)
        return try ctx.shared(event, extraction.sharedKind) {
            Self.withDigests(try extraction.pageItems(in: body, url: event[metadata: "url"] ?? ""))
        }
    }

    /// ``canonicalItems(in:url:)`` of a page's body as the items fold takes them: a page large
    /// enough for its items' versions to be kept as slices of it (``PayloadSlice``) is read in
    /// its stored form, where the slices' ranges are.
    package func pageItems(in body: [UInt8], url: String) throws(FetchError) -> [CanonicalItem] {
        guard body.count >= PayloadSlice.minimumBody, let form = PayloadSlice.form(of: body) else { return try canonicalItems(in: body, url: url) }
        return try canonicalItems(in: form, url: url)
    }

    /// `items`, the ``canonicalItems(in:url:)`` of a page event's body worked out before it is
    /// appended, for ``pageItems(_:body:_:)`` to take instead of working them out on the
    /// writer's thread (``NewEvent/shared``), digests too.
    package func shared(_ items: [CanonicalItem]) -> SharedValue {
        let (value, bytes) = Self.withDigests(items)
        return SharedValue(kind: sharedKind, value: value, bytes: bytes)
    }

    private var sharedKind: String { "page-items\u{0}\(itemsPath ?? "")\u{0}\(idPaths.joined(separator: ","))" }

    private static func withDigests(_ items: [CanonicalItem]) -> (value: PageItems, bytes: Int) {
        (
            items.map { ($0.key, $0.canonical, Hashing.sha256($0.canonical, prefix: 16), $0.range) },
            items.reduce(0) { $0 + $1.key.utf8.count + $1.canonical.count + 80 }
        )
    }

    /// The ids and byte ranges of the items of an ordinary list body: valid JSON, the items where
    /// the path says, every id a non-empty string or a number, no duplicates. nil for anything
    /// else, which ``items(in:url:)`` then answers (or explains) from the tree.
    func scan(_ body: [UInt8]) -> [(key: String, range: Range<Int>)]? {
        body.withUnsafeBytes { raw -> [(key: String, range: Range<Int>)]? in
            guard let container = try? JSONSpans.container(atPath: itemsPath ?? "", in: raw) else { return nil }
            switch container {
            case .array(let ranges):
                guard idPaths != ["@key"] else { return nil }
                var out: [(key: String, range: Range<Int>)] = []
                out.reserveCapacity(ranges.count)
                var seen = Set<String>(minimumCapacity: ranges.count)
                for r in ranges {
                    let item = UnsafeRawBufferPointer(rebasing: raw[r])
                    var parts: [String] = []
                    for p in idPaths {
                        switch try? JSONSpans.scalar(atPath: p, in: item) {
                        case .string(let s)? where !s.isEmpty: parts.append(s)
                        case .number(let n)?: parts.append(n)
                        default: return nil
                        }
                    }
                    let key = parts.count == 1 ? parts[0] : parts.joined(separator: ":")
                    guard !key.utf8.contains(0), key.utf8.count <= 400, seen.insert(key).inserted else { return nil }
                    out.append((key, r))
                }
                return out
            case .object(let members) where idPaths == ["@key"]:
                return members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.range) }
            default:
                return nil
            }
        }
    }

    private func id(of item: JSONValue, index: Int, url: String) throws(FetchError) -> String {
        var parts: [String] = []
        for p in idPaths {
            switch item.value(atPath: p) {
            case .string(let s)? where !s.isEmpty: parts.append(s)
            case .number(let n)?: parts.append(n)
            default:
                throw FetchError(code: .missingId, message: "item \(index) has no usable id at '\(p)'", url: url, subject: .field("id"))
            }
        }
        let key = parts.joined(separator: ":")
        guard !key.utf8.contains(0), key.utf8.count <= 400 else {
            throw FetchError(code: .missingId, message: "item \(index) has an id that is too long or contains NUL", url: url)
        }
        return key
    }
}
