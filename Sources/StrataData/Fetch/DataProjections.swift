public import EventStore

/// The projections of the data layer, all built on ``KeyedDocumentProjection``.
public enum DataProjections {
    /// Source definitions: collection `sources`, key = source name; settings (`config set`):
    /// collection `config`, key = setting.
    public static let sources = KeyedDocumentProjection(
        name: "sources", version: 22, eventTypes: [DataEvents.sourceDefined, DataEvents.sourceChanged, DataEvents.sourceRemoved, WriteEvents.configChanged]
    ) { event, ctx in
        switch event.type {
        case WriteEvents.configChanged:
            guard let key = event[metadata: "key"], let body = try ctx.payload(of: event) else { throw DocumentError("config event without a key or value") }
            return [.put(collection: "config", key: key, document: try JSONValue(parsing: body))]
        case DataEvents.sourceDefined, DataEvents.sourceChanged:
            guard let name = event[metadata: "source"], let body = try ctx.payload(of: event) else {
                throw DocumentError("source event without a name or definition")
            }
            return [.put(collection: "sources", key: name, document: try JSONValue(parsing: body))]
        case DataEvents.sourceRemoved:
            guard let name = event[metadata: "source"] else { throw DocumentError("source event without a name") }
            return [.remove(collection: "sources", key: name)]
        default:
            return nil
        }
    }

    /// Items: collection = source name, key = item id. Pages put their items (a 304 page puts the
    /// same items again, which only marks them seen); a complete pass sweeps the unseen ones away.
    /// A source's `index` fields are kept in an exact-match index for `--where` filters.
    /// Local writes are overlaid on the fetched documents (``PendingOverlay``): an item with open
    /// writes shows them, through fetches, until the server answers.
    public static let items = KeyedDocumentProjection(
        name: "items", version: 34,
        eventTypes: Set([
            DataEvents.sourceDefined, DataEvents.sourceChanged, DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.fetchCompleted,
            DataEvents.redactionKeyRecorded
        ])
        .union(WriteEvents.writes).union(WriteEvents.outcomes),
        extraTables: PendingOverlay.tables + [IgnoredFields.table] + RedactionRestore.tables,
        // `changes` walks a span in log order (``ItemTables/changes``).
        keepsChangeOrder: true,
        // A page retention dropped keeps none of its items; a write of a forgotten item shows
        // nothing (the item is gone). A page a forget cut is folded as it is now.
        skipping: EventFate.gone
    ) { event, _, ctx in
        switch event.type {
        case DataEvents.sourceDefined, DataEvents.sourceChanged:
            guard let name = event[metadata: "source"], let body = try ctx.payload(of: event) else {
                throw DocumentError("source event without a name or definition")
            }
            let definition = try JSONValue(parsing: body)
            try IgnoredFields.set(definition.value(atPath: "ignore"), source: name, ctx)
            try RedactionRestore.defined(definition, source: name, seq: event.seq, ctx)
            guard case .array(let paths)? = definition.value(atPath: "index") else { return [.index(collection: name, paths: [])] }
            return [.index(collection: name, paths: paths.compactMap { if case .string(let p) = $0 { p } else { nil } })]
        case DataEvents.pageFetched, DataEvents.pageNotModified:
            guard let source = event[metadata: "source"], let body = try ctx.payload(of: event) else {
                throw DocumentError("page event without a source or body")
            }
            let url = event[metadata: "url"] ?? ""
            let ignored = try IgnoredFields(source: source, ctx)
            let restore = try RedactionRestore(source: source, ctx)
            let overlay = PendingOverlay(context: ctx, source: source)
            // The usual page: each item's canonical text, with no tree (shared with the schema).
            if ignored == nil, restore == nil, try overlay.isEmpty() {
                // Each with where it is in the body: a large page's body holds the item's
                // version, which the history keeps as that slice once it is not the item's last.
                return try ItemExtraction.pageItems(event, body: body, ctx).map { item in
                    guard let range = item.range else {
                        return .putCanonical(collection: source, key: item.key, canonical: item.canonical, digest: item.digest)
                    }
                    return .putSlice(collection: source, key: item.key, canonical: item.canonical, digest: item.digest, range: range)
                }
            }
            var (_, items) = try ItemExtraction(metadataOf: event).items(in: body, url: url)
            try ignored?.keepUnchanged(&items)
            try restore?.mark(items, seq: event.seq)
            if try overlay.isEmpty() { return items.map { .put(collection: source, key: $0.key, document: $0.item) } }
            return try items.map { try overlay.serverPut($0.key, $0.item) ?? .put(collection: source, key: $0.key, document: $0.item) }
        case DataEvents.fetchCompleted:
            // The run's pages and this event were appended in one batch, so they are the `pages`
            // events right before it.
            guard let source = event[metadata: "source"], event[metadata: "complete"] == "true",
                let pages = event[metadata: "pages"].flatMap(UInt64.init), pages < event.seq
            else { return [] }
            let since = event.seq - pages
            try RedactionRestore.passCompleted(source: source, since: since, ctx)
            let overlay = PendingOverlay(context: ctx, source: source)
            let kept =
                try overlay.isEmpty() ? [] : try overlay.completePass(since: since, reader: DocumentReader(transaction: ctx.transaction, tables: ctx.tables))
            return kept + [.sweep(collection: source, since: since)]
        case DataEvents.redactionKeyRecorded:
            if event[metadata: "reason"] == "rotated" { try RedactionRestore.keyRotated(seq: event.seq, ctx) }
            return []
        case let t where WriteEvents.writes.contains(t) || WriteEvents.outcomes.contains(t):
            return try LocalWriteFold.items(event, ctx)
        default:
            return nil
        }
    }

    /// Detail documents: collection = source name, key = item id.
    public static let details = KeyedDocumentProjection(
        name: "details", version: 25, eventTypes: [DataEvents.detailFetched, DataEvents.detailNotModified],
        documentTypes: [DataEvents.detailFetched, DataEvents.detailNotModified], keepsChangeOrder: true,
        skipping: EventFate.gone  // an erased or dropped detail leaves no document
    ) { event, _, ctx in
        guard event.type == DataEvents.detailFetched || event.type == DataEvents.detailNotModified else { return nil }
        guard let source = event[metadata: "source"], let key = event[metadata: "key"], let body = try ctx.payload(of: event) else {
            throw DocumentError("detail event without source, key or body")
        }
        return [.putJSON(collection: source, key: key, json: body)]
    }

    /// Stored images: collection = source name, key = item id; document = url, sha256, size, type.
    public static let images = KeyedDocumentProjection(name: "images", version: 22, eventTypes: [DataEvents.imageFetched], skipping: EventFate.gone) {
        event, _, ctx in
        guard event.type == DataEvents.imageFetched else { return nil }
        guard let source = event[metadata: "source"], let key = event[metadata: "key"], let ref = event.payload else {
            throw DocumentError("image event without source, key or body")
        }
        return [
            .put(
                collection: source, key: key,
                document: .object([
                    "url": .string(event[metadata: "url"] ?? ""), "sha256": .string(ref.hashHex), "size": .number(String(ref.size)),
                    "contentType": .string(event[metadata: "contentType"] ?? "")
                ]))
        ]
    }

    /// Validators per URL for conditional requests: collection `http`, key = URL;
    /// document = etag, lastModified, sha256 and size of the body they validate, the source's
    /// redaction then (`redaction`), and for a list page where it leads (`next`, `paging`).
    public static let httpCache = KeyedDocumentProjection(
        name: "http-cache", version: 23,
        eventTypes: [DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.detailFetched, DataEvents.imageFetched],
        skipping: []
    ) { event, fate, ctx in
        switch event.type {
        case DataEvents.pageFetched, DataEvents.pageNotModified, DataEvents.detailFetched, DataEvents.imageFetched:
            guard let url = event[metadata: "url"], let ref = event.payload, event[metadata: "import"] == nil else { return [] }
            // A body cut, erased or dropped validates another body than the API's now.
            if fate != .kept { return [.remove(collection: "http", key: url)] }
            let etag = event[metadata: "etag"], modified = event[metadata: "lastModified"]
            guard etag != nil || modified != nil else { return [.remove(collection: "http", key: url)] }
            var doc: [String: JSONValue] = ["sha256": .string(ref.hashHex), "size": .number(String(ref.size))]
            if let etag { doc["etag"] = .string(etag) }
            if let modified { doc["lastModified"] = .string(modified) }
            if let link = event[metadata: "link"] { doc["link"] = .string(link) }
            if let redaction = event[metadata: "redaction"] { doc["redaction"] = .string(redaction) }
            // Where a list page leads (its next URL, "" for the last) and under which paging.
            if let next = event[metadata: "next"], let paging = event[metadata: "paging"] { doc["next"] = .string(next); doc["paging"] = .string(paging) }
            return [.put(collection: "http", key: url, document: .object(doc))]
        default:
            return nil
        }
    }

    /// Every projection the data layer keeps, besides the generic documents projection.
    public static let timeline = ObservationTimeline()

    public static let recordings = RecordingIndex()

    public static let all: [any Projection] = [
        sources, items, details, images, httpCache, timeline, Outbox.projection, recordings, AlertProjection.projection, SchemaProjection.projection
    ]
}
