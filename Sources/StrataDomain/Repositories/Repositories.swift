package import StrataJSON

/// The stored items of every source: lists, filters, single items, history and diffs, now or as
/// of any point of the log. Reads never touch the network.
package protocol ItemRepository: Sendable {
    /// The items matching `query`. Throws `notFound` for an unknown source.
    func items(_ query: ItemQuery) async throws -> ItemPage
    /// How many items match `query` (its limit, offset and sort aside), by the values at `paths`
    /// (an array counts each of its elements), most first; one total when `paths` is empty.
    func count(_ query: ItemQuery, by paths: [String]) async throws -> (counts: [ItemCount], usedIndex: Bool)
    /// One item (with its detail and image) at a point; nil if it did not exist there.
    func item(source: String, id: String, at point: PointInTime) async throws -> Item?
    /// Every version of an item, oldest first, up to a point.
    func history(source: String, id: String, upTo point: PointInTime) async throws -> [ItemVersion]
    /// Every version of an item up to a point, placed, numbered and labelled as
    /// ``history(source:id:upTo:)`` has them, with documents and changes read only for the
    /// versions `page` picks: a page of a long history compares what it shows, not all of it.
    func history(source: String, id: String, upTo point: PointInTime, page: HistoryPage) async throws -> ItemHistoryPage
    /// Every change of the source's items (list entries and details) after seq `after` up to seq
    /// `upTo`, oldest first in observed order (a backfilled version where its date puts it), at
    /// one seq by id in natural order; in batches, as they are read, so a reader that stops early
    /// reads no further. Kinds outside `kinds` are left out unread, and changes `matching`
    /// refuses (given the item after and before) before their field changes are worked out. A
    /// version that only stored values again redacted anew is no change. Throws `notFound` for an
    /// unknown source, and for a span ending before the source's retention horizon.
    func changes(
        source: String, after: UInt64, upTo: UInt64, kinds: Set<ChangeKind>, matching: @escaping @Sendable (JSONValue?, JSONValue?) -> Bool
    ) -> AsyncThrowingStream<[ItemChange], any Error>
    /// Items added, removed, changed or back between two points.
    func diff(source: String, from: PointInTime, to: PointInTime) async throws -> CollectionDiff
    /// The bytes of a stored image.
    func imageData(_ image: ItemImage) async throws -> [UInt8]?
}

extension ItemRepository {
    /// The whole history read, then paged: for stores with nothing cheaper.
    package func history(source: String, id: String, upTo point: PointInTime, page: HistoryPage) async throws -> ItemHistoryPage {
        ItemHistoryPage(try await history(source: source, id: id, upTo: point), page: page)
    }
}

/// The defined sources and the state of their fetches.
package protocol SourceRepository: Sendable {
    func sources() async throws -> [Source]
    /// The source named `name`. Throws `notFound` naming the known ones.
    func source(named name: String) async throws -> Source
}

/// The network side: downloads into the store. Every response and failure becomes an event.
package protocol RemoteRepository: Sendable {
    /// Fetches the source's list (and details and images as asked) into the store.
    func refresh(source: String, request: RefreshRequest) async throws -> RefreshResult
    /// Downloads one item's detail into the store. Throws `network` when it could not.
    func loadDetail(source: String, id: String) async throws
}

/// The event log itself.
/// Leases on sources in the team logs a store shares: before a fetch the store takes (or renews)
/// its source's lease, so that only one node fetches a source at a time and a node that lost it
/// (paused, taken over) has its late events refused rather than interleaved.
package protocol SourceLeaseRepository: Sendable {
    /// Takes or renews this store's lease on `source`; `force` takes a lease another node holds
    /// and has not let expire. Nil when the store shares no team log. A team log that cannot be
    /// reached gives a lease without a token (the fetch goes on; a later push may be refused).
    /// - Throws: ``RepositoryError`` `.conflict` when another node holds a live lease and `force`
    ///   is false.
    func lease(source: String, force: Bool) async throws -> SourceLease?
}

package protocol EventLogRepository: Sendable {
    func entries(_ query: LogQuery) async throws -> [LogEntry]
    /// The seq a point stands for: the head for `.now`, the last event at or before a date.
    func resolve(_ point: PointInTime) async throws -> UInt64
    /// A stored body (an event's payload) by SHA-256; nil when not stored.
    func body(sha256: String) async throws -> [UInt8]?
    /// An event's payload as it is shown outside the store (exports): the stored body, except
    /// that a source definition stored before literal credentials were refused has them hidden.
    func shownPayload(of entry: LogEntry) async throws -> [UInt8]?
}

extension RemoteRepository {
    /// The list, with every detail revalidated when `details`, and images when `images`.
    package func refresh(source: String, details: Bool, images: Bool) async throws -> RefreshResult {
        try await refresh(source: source, request: RefreshRequest(details: details ? .all(maxAge: nil) : .none, images: images))
    }
}

/// History from outside the API: snapshots kept in files or in a git repository.
package protocol ArchiveRepository: Sendable {
    /// Appends every snapshot of `origin` as a complete pass over the source's list, observed at
    /// its own time; `progress` gets the number of snapshots handled so far.
    func importHistory(source: String, from origin: HistoryOrigin, progress: (@Sendable (Int) -> Void)?) async throws -> ImportResult
}

/// Writes what the app reads into the formats other tools open.
package protocol ExportRepository: Sendable {
    /// Writes a source's items and every version into a SQLite file at `path` (replaced whole).
    func writeSQLite(_ export: SQLiteExport, to path: String) async throws -> SQLiteExportSummary
}

/// The source definitions themselves (what `source add` writes), as events.
package protocol SourceCatalogRepository: Sendable {
    /// Checks a spec as ``define(_:replace:keepingLiteralSecrets:)`` will, before anything is
    /// taken or written. Throws ``RepositoryError`` `invalidQuery` naming the field at fault.
    func validate(_ spec: SourceSpec, keepingLiteralSecrets: Bool) throws
    /// Appends the definition (or its change); returns its seq. With `keepingLiteralSecrets`,
    /// literal credentials in its headers are kept outside the log and referred to.
    func define(_ spec: SourceSpec, replace: Bool, keepingLiteralSecrets: Bool) async throws -> UInt64
    func definitions() async throws -> [SourceSpec]
    func definition(_ name: String) async throws -> SourceSpec?
    func remove(_ name: String) async throws
    /// The definition as the log stores it, keys sorted, a literal credential (from a store
    /// defined before literals were refused) shown as `[hidden]`.
    func storedForm(_ spec: SourceSpec) -> JSONValue
}

/// Local writes as events: creates, patches, deletes, staged edits and sessions, settings, and
/// the outbox they wait in. Nothing here touches the network.
package protocol WriteRepository: Sendable {
    /// A setting (`user`), or nil.
    func setting(_ key: String) async throws -> JSONValue?
    func settings() async throws -> [(key: String, value: JSONValue)]
    func setSetting(_ key: String, _ value: JSONValue) async throws
    /// What a write on the item would be based on now (reads show it; local writes included);
    /// nil when the item is not there.
    func base(source: String, id: String) async throws -> WriteBase?
    /// Creates an item under a new local id; returns the write's seq and that id.
    func create(source: String, document: JSONValue, user: String) async throws -> (seq: UInt64, id: String)
    func patch(source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64
    func delete(source: String, items: [(id: String, base: WriteBase)], user: String) async throws -> [UInt64]
    func stage(session: String, source: String, id: String, changes: [Change], base: WriteBase, user: String) async throws -> UInt64
    /// A session's staged edits, or nil when it never existed.
    func session(_ name: String) async throws -> SessionRecord?
    func sessions() async throws -> [SessionRecord]
    /// The session's acceptance and one patch per item, appended as one batch.
    func accept(session: String, patches: [(source: String, id: String, changes: [Change], base: WriteBase)], user: String) async throws -> [UInt64]
    func cancel(session: String, edits: Int, user: String) async throws
    /// Open writes (or every write with `all`, newest first), of one source or all.
    func outbox(source: String?, all: Bool) async throws -> [LocalWrite]
    func write(seq: UInt64) async throws -> LocalWrite?
    /// Puts a write back in the outbox; `force`: send it over the server's conflicting version.
    func retry(_ write: LocalWrite, force: Bool, user: String) async throws
    func drop(_ write: LocalWrite, user: String) async throws
}

/// The network side of writes: sends a source's outbox. Every attempt and answer is an event.
package protocol PushRepository: Sendable {
    func push(source: String, concurrency: Int) async throws -> PushReport
}

/// Recorded responses by URL (the `recordings` index), for serving the API as it was.
package protocol RecordingRepository: Sendable {
    /// The recording of `target` in force at `point` (the last one at or before it), on `host`, or
    /// on the only host it was fetched from when `host` is nil; the point is resolved in the same
    /// read snapshot. Only recordings of `sources` count (all when empty): their first, previous,
    /// next and last too. Throws ``RepositoryError`` `invalidQuery` for a seq after the head.
    func recording(target: String, host: String?, at point: PointInTime, sources: Set<String>) async throws -> RecordingLookup
    /// The first recording of `target` after `seq`, among `sources` (all when empty).
    func recording(target: String, host: String?, after seq: UInt64, sources: Set<String>) async throws -> RecordingLookup
    /// The last seq of the fetch run that holds `seq + 1` (a run: from its first page up to the
    /// next run's first page, its details and images included), or the head; nil when `seq` is
    /// the head.
    func runEnd(after seq: UInt64) async throws -> UInt64?
    /// The distinct bodies a request body may have been recorded as, besides itself: as each
    /// source that redacts JSON paths stored it (its digest is part of the request's key).
    func redactedRequestBodies(_ body: [UInt8], headers: [(name: String, value: String)]) async throws -> [[UInt8]]
    /// What a request is recorded under: its target for a GET without a body, else the method,
    /// the target and the body's digest.
    func requestKey(method: String, target: String, body: [UInt8]?) -> String
    /// A request body's SHA-256, lower-case hex.
    func bodyDigest(_ body: [UInt8]) -> String
}
