import Foundation
public import LMDB
public import Logging

/// Options for opening a store.
public struct StoreOptions: Sendable {
    /// How commits reach the disk. A process crash never loses a committed batch in any mode.
    public enum Durability: String, Sendable, CaseIterable {
        /// fsync on every commit: a power loss loses nothing committed.
        case full
        /// skip the meta-page fsync: a power loss may undo the last batch, never corrupt.
        case noMetaSync = "nometasync"
        /// no fsync: a power loss may lose recent batches.
        case noSync = "nosync"

        var lmdb: EnvironmentOptions.Durability {
            switch self {
            case .full: .full
            case .noMetaSync: .noMetaSync
            case .noSync: .noSync
            }
        }
    }

    /// Initial map size; it only reserves address space and grows on demand.
    public var mapSize: Int = 8 << 30
    public var durability: Durability = .full
    public var maxReaders: UInt32 = 126
    public var clock: any EventClock = SystemClock()
    public var logger = Logger(label: "strata.eventstore")
    /// Events per write transaction when catching up or rebuilding.
    public var catchUpChunk = 131_072
    /// The `body-index` key length (bytes of the body hash) of a store created with these options;
    /// an existing store keeps its own. Tests shorten it to make prefixes collide.
    var bodyPrefix = BodyIndex.defaultPrefix
    /// Versions of a URL's body from one whole (keyframe) copy to the next; the ones between are
    /// zstd deltas against the version before (``DeltaChains``), so a read decodes at most this
    /// many frames.
    public var deltaKeyframeInterval = DeltaChains.defaultKeyframeInterval
    /// The store's key (``StoreKey``): an encrypted store needs it, and a new store given one is
    /// created encrypted. Never stored.
    public var key: StoreKey?
    /// The cipher of the store a scratch copy is made of (``EventStore/replay(upTo:into:)``).
    var copyOf: StoreCipher?

    public init() {}
}

/// An append-only, hash-chained event log in LMDB, with content-addressed bodies, projections
/// kept in step with the log in the same transactions, and reads at any point in history.
///
/// ```swift
/// let store = try await EventStore.open(at: path, projections: [KeyedDocumentProjection()])
/// try await store.append([NewEvent(type: "DocumentRecorded", stream: "cars",
///                                  metadata: [("collection", "cars"), ("key", "42")], payload: body)])
/// let events = try await store.events(EventQuery(stream: "cars", limit: 10))
/// ```
///
/// Writes go through one serial writer per process; reads run on a background queue with their
/// own read-only snapshot and never block the writer or the caller.
public final class EventStore: Sendable {
    public let path: String
    public let projections: [any Projection]
    let environment: Environment
    let schema: LogSchema
    let writer: LogWriter
    let options: StoreOptions
    /// The directory's shared lock while the store is open (``StoreOpenLock``).
    let openLock: StoreOpenLock?

    private init(
        path: String, environment: Environment, schema: LogSchema, projections: [any Projection], options: StoreOptions,
        openLock: StoreOpenLock?
    ) {
        self.path = path
        self.openLock = openLock
        self.environment = environment
        self.schema = schema
        self.projections = projections
        self.options = options
        writer = LogWriter(
            environment: environment, schema: schema, projections: projections, clock: options.clock, logger: options.logger,
            keyframeInterval: options.deltaKeyframeInterval)
    }

    /// Flushes committed writes to disk (for stores opened without fsync on commit).
    public func sync() throws {
        do { try environment.sync() } catch { throw EventStoreError.wrap(error, "sync failed") }
    }

    /// Whether the store's values are sealed under a key (``StoreOptions/key``).
    public var isEncrypted: Bool { schema.cipher != nil }

    /// Opens the store in `directory` (created with mode 0700 if missing), then brings every
    /// projection up to the head of the log, rebuilding those whose version changed.
    /// - Throws: ``EventStoreError`` if the directory cannot be created or the store is damaged.
    public static func open(
        at directory: String, projections: [any Projection] = [], options: StoreOptions = StoreOptions(),
        progress: (@Sendable (RebuildProgress) -> Void)? = nil
    ) async throws -> EventStore {
        let names = projections.map(\.name)
        guard Set(names).count == names.count else {
            throw EventStoreError(code: .invalidArgument, message: "two projections share a name: \(names)")
        }
        let store: EventStore
        do {
            let fm = FileManager.default
            if !fm.fileExists(atPath: directory) {
                try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            var env = EnvironmentOptions()
            env.mapSize = options.mapSize
            env.durability = options.durability.lmdb
            env.maxReaders = options.maxReaders
            // The log's 15 tables (`bodies.chunks` among them) and room to spare; each projection's
            // tables, their chunks, its names table (an encrypted store), and tables it retired.
            env.maxDatabases = UInt32(24 + projections.reduce(0) { $0 + $1.tables.count + $1.chunkedTables.count + $1.retiredTables.count + 1 })
            env.fileMode = 0o600
            // Taken before the environment opens: a swap holding it exclusively finishes first.
            let openLock = StoreOpenLock(directory: directory)
            let environment = try Environment(path: directory, options: env)
            let encryption: LogSchema.Encryption = if let c = options.copyOf { .copyOf(c) } else if let k = options.key { .key(k) } else { .none }
            let schema = try LogSchema(opening: environment, projections: projections, bodyPrefix: options.bodyPrefix, encryption: encryption)
            store = EventStore(
                path: directory, environment: environment, schema: schema, projections: projections, options: options,
                openLock: openLock)
        } catch {
            throw EventStoreError.wrap(error, "could not open the store at \(directory)")
        }
        if store.schema.migratingToDeltaChains {
            do {
                let n = try await store.writer.migrateToDeltaChains()
                options.logger.info("bodies rewritten as delta chains", metadata: ["bodies": "\(n)"])
            } catch {
                throw EventStoreError.wrap(error, "could not rewrite the store's bodies as delta chains (run the command again to resume)")
            }
        }
        try await store.catchUp(progress: progress)
        return store
    }

    // MARK: Writing

    /// Appends a batch atomically: events, indexes, bodies, projection updates and checkpoints
    /// commit in one transaction, so a crash keeps all of the batch or none of it. An event whose
    /// id is already in the log is not appended again; its outcome carries the original seq.
    public func append(_ events: [NewEvent]) async throws -> [AppendOutcome] {
        do { return try await writer.append(events) } catch { throw EventStoreError.wrap(error, "append failed") }
    }

    /// Starts preparing `events` for an append now: each body's hash, stored (compressed) form
    /// and, for document types, canonical form, on the store's helper thread. Appending the result
    /// while another batch commits finds that work done, so a caller with its next batch at hand
    /// (an import, a bulk load, ``append(batches:)``) keeps both cores busy. A batch never
    /// appended costs only the preparation.
    public func prepare(_ events: [NewEvent]) -> PreparedBatch {
        PreparedBatch(prep: writer.prepare(events))
    }

    /// Appends a batch ``prepare(_:)`` started, exactly as `append(_:)` appends its events.
    public func append(_ batch: PreparedBatch) async throws -> [AppendOutcome] {
        do { return try await writer.append(batch.prep) } catch { throw EventStoreError.wrap(error, "append failed") }
    }

    /// Appends `batches` in order, each in its own transaction as `append(_:)` would (a batch is
    /// durable before the next one begins), preparing each batch while the one before it commits.
    /// Stops at the first error; the batches before it stay appended.
    public func append(batches: some Sequence<[NewEvent]>) async throws -> [[AppendOutcome]] {
        var outcomes: [[AppendOutcome]] = []
        var iterator = batches.makeIterator()
        var next = iterator.next().map(prepare)
        while let current = next {
            next = iterator.next().map(prepare)
            outcomes.append(try await append(current))
        }
        return outcomes
    }

    /// Appends one event.
    @discardableResult
    public func append(_ event: NewEvent) async throws -> AppendOutcome {
        try await append([event])[0]
    }

    /// Brings projections up to the head (done on open; useful after another process wrote).
    public func catchUp(progress: (@Sendable (RebuildProgress) -> Void)? = nil) async throws {
        let chunk = options.catchUpChunk
        do { try await writer.catchUpAll(chunk: chunk, progress: progress) } catch { throw EventStoreError.wrap(error, "projection catch-up failed") }
    }

    /// Rebuilds the named projections (all when `names` is empty) from seq 0, in committed chunks:
    /// if interrupted, the next open resumes where it stopped.
    public func rebuild(_ names: [String] = [], progress: (@Sendable (RebuildProgress) -> Void)? = nil) async throws {
        let known = Set(projections.map(\.name))
        for n in names where !known.contains(n) {
            throw EventStoreError(code: .unknownProjection, message: "no projection named '\(n)'; known: \(known.sorted().joined(separator: ", "))")
        }
        let targets = names.isEmpty ? known : Set(names)
        let chunk = options.catchUpChunk
        do { try await writer.catchUpAll(resetting: targets, chunk: chunk, progress: progress) } catch { throw EventStoreError.wrap(error, "rebuild failed") }
    }

    // MARK: Reading

    /// Runs `body` in a read-only snapshot on a background queue. The snapshot never blocks the
    /// writer, and the caller's task is suspended, not blocked, while it runs.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        let env = environment
        return try await withCheckedThrowingContinuation { cont in
            DispatchQueue.global().async {
                do { cont.resume(returning: try env.read(body)) } catch { cont.resume(throwing: EventStoreError.wrap(error, "read failed")) }
            }
        }
    }

    /// The tables of projection `name`, for use inside ``read(_:)``.
    public func tables(of name: String) throws -> TableSet {
        guard let t = schema.projectionTables[name] else {
            throw EventStoreError(code: .unknownProjection, message: "no projection named '\(name)'")
        }
        return t
    }

    /// The last seq and hash of the log (0 and zeros when empty).
    public func head() async throws -> (seq: UInt64, hash: String) {
        let schema = self.schema
        return try await read { txn in
            let h = try LogHead.read(txn, schema)
            return (h.seq, h.hash.hex)
        }
    }

    /// Events matching `query`.
    public func events(_ query: EventQuery) async throws -> [RecordedEvent] {
        let schema = self.schema
        return try await read { txn in try EventQuery.run(query, txn, schema) }
    }

    /// The newest event of `stream` whose type is one of `types`, in one read snapshot. The
    /// stream's last 32 events are looked at first (a poll's pass is usually among them); past
    /// those, each type's index is walked down from the head, and no further than the best match
    /// so far, so the cost is the events of those types appended since (in any stream), not the
    /// length of the stream: a source's thousands of detail events after its last list pass, or
    /// its thousands of unchanged polls, are never read. Put the type most likely to be the
    /// answer first.
    public func newestEvent(inStream stream: String, ofTypes types: [String]) async throws -> RecordedEvent? {
        let schema = self.schema
        return try await read { txn in
            var best: RecordedEvent?
            var looked = 0
            try EventQuery.walk(schema.byStream, stream, from: 1, to: .max, descending: true, txn, schema) { event in
                looked += 1
                if types.contains(event.type) { best = event }
                return best == nil && looked < 32
            }
            if best != nil { return best }
            for type in types {
                try EventQuery.walk(schema.byType, type, from: (best?.seq ?? 0) + 1, to: .max, descending: true, txn, schema) { event in
                    guard event.stream == stream else { return true }
                    best = event
                    return false
                }
            }
            return best
        }
    }

    /// The event with this seq, if any.
    public func event(seq: UInt64) async throws -> RecordedEvent? {
        let schema = self.schema
        return try await read { txn in try schema.event(at: seq, txn) }
    }

    /// The event with this id, if any.
    public func event(id: String) async throws -> RecordedEvent? {
        let schema = self.schema
        return try await read { txn in
            guard let seq = try schema.withIDKey(id, { try txn.get(schema.ids, key: $0).map { UInt64(bigEndianBytes: $0) } }) else { return nil }
            return try schema.event(at: seq, txn)
        }
    }

    /// The body of an event, decompressed; nil if it has none.
    public func payload(of event: RecordedEvent) async throws -> [UInt8]? {
        let schema = self.schema
        return try await read { txn in try ZstdContext.pooled { try PayloadSource(schema: schema, zstd: $0).body(of: event, in: txn) } }
    }

    /// Which of these SHA-256es have a stored body, in one read snapshot (an event may then
    /// reference the body instead of carrying it).
    public func storedBodies(_ hashes: [[UInt8]]) async throws -> Set<[UInt8]> {
        let schema = self.schema
        return try await read { txn in Set(try hashes.filter { try schema.bodyIndex.contains($0, in: txn) }) }
    }

    /// A stored body by its SHA-256 (hex), decompressed; nil if absent.
    public func body(sha256 hex: String) async throws -> [UInt8]? {
        guard let key = [UInt8](hex: hex), key.count == 32 else { return nil }
        let schema = self.schema
        return try await read { txn in
            guard let stored = try key.withUnsafeBytes({ try schema.bodyIndex.stored(hash: $0, in: txn) }) else { return nil }
            return try BlobCodec.decode(stored, bases: DeltaBases(bodies: schema.bodies, txn: txn))
        }
    }

    /// Resolves a point in time to a seq: the last event whose effective time (the running maximum
    /// of `recordedAt` along the log) is at or before `time`; 0 if none.
    public func seq(asOf time: Timestamp) async throws -> UInt64 {
        let schema = self.schema
        return try await read { txn in try LogSchema.seq(asOf: time, txn, schema) }
    }

    /// Events the projections could not apply, with the reason.
    public func quarantined(projection: String? = nil) async throws -> [QuarantinedEvent] {
        let schema = self.schema
        return try await read { txn in
            let c = try txn.cursor(schema.quarantine)
            let prefix: [UInt8] = projection.map { Array($0.utf8) + [0] } ?? []
            var out: [QuarantinedEvent] = []
            var e = try c.seek(atLeast: prefix)
            while let entry = e, entry.key.hasPrefix(prefix) {
                let k = [UInt8](entry.key)
                let name = String(decoding: k[0..<(k.count - 9)], as: UTF8.self)
                let seq = UInt64(bigEndianBytes: UnsafeRawBufferPointer(rebasing: entry.key[(k.count - 8)...]))
                out.append(QuarantinedEvent(projection: name, seq: seq, reason: String(decoding: entry.value, as: UTF8.self)))
                e = try c.next()
            }
            return out
        }
    }

    // MARK: Replay

    /// Folds the log from zero up to `seq` into a new scratch store in `directory` (a fresh
    /// temporary directory when nil): same events, same hashes, projections computed from scratch.
    /// The caller owns the directory. Used by `verify` and by tests as the oracle for as-of reads.
    public func replay(upTo seq: UInt64? = nil, into directory: String? = nil) async throws -> EventStore {
        let dir =
            directory
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-replay-\(UUID().uuidString)").path
        var opts = StoreOptions()
        opts.durability = .noSync
        opts.clock = options.clock
        opts.logger = options.logger
        opts.mapSize = max(64 << 20, environment.usedBytes * 2)
        opts.copyOf = schema.cipher
        let scratch = try await EventStore.open(at: dir, projections: projections, options: opts)
        // Before the log: the copy folds what it copies, and an erased body must fold as erased.
        try await copyRewrites(into: scratch)
        try await copyLog(upTo: seq, into: scratch)
        return scratch
    }

    /// Copies the log after `target`'s head, up to `seq` (the head when nil), into `target`
    /// (envelopes and stored bodies as they are), folding `target`'s projections, in committed
    /// chunks of 4,096 events: a copy stopped part-way goes on from where it stopped.
    /// - Throws: when `target` holds events this log does not (another history).
    func copyLog(upTo seq: UInt64? = nil, into scratch: EventStore, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws {
        let headSeq = try await head().seq
        let limit = min(seq ?? headSeq, headSeq)
        let theirs = try await scratch.head()
        var next = theirs.seq + 1
        if theirs.seq > 0 {
            guard let mine = try await event(seq: theirs.seq), mine.hash.hex == theirs.hash else {
                throw EventStoreError(
                    code: .invalidArgument, message: "the store at \(scratch.path) holds another history than \(path); remove it to copy again")
            }
        }
        let schema = self.schema
        let targetSchema = scratch.schema
        let targetEnv = scratch.environment
        while next <= limit {
            let from = next
            let chunk = try await read { txn -> [RecordedChunkEntry] in
                var c = try EnvelopeCursor(schema, txn)
                var out: [RecordedChunkEntry] = []
                var entry = try c.seek(atLeast: from)
                while let (s, envelope) = entry, out.count < 4_096 {
                    if s > limit { break }
                    let event = try Envelope.decode(envelope)
                    var blob: [UInt8]?
                    if let ref = event.payload {
                        let present = try targetEnv.read { t in try targetSchema.bodyIndex.contains(ref.hash, in: t) }
                        if !present, let stored = try ref.hash.withUnsafeBytes({ try schema.bodyIndex.stored(hash: $0, in: txn) }) {
                            blob = [UInt8](stored)
                        }
                    }
                    out.append(RecordedChunkEntry(event: event, envelope: [UInt8](envelope), storedBlob: blob))
                    entry = try c.next()
                }
                return out
            }
            guard let last = chunk.last else { break }
            do { try await scratch.writer.importRecorded(chunk) } catch { throw EventStoreError.wrap(error, "replay failed") }
            next = last.event.seq + 1
            progress?(last.event.seq, limit)
        }
    }
}

/// An event a projection could not apply.
public struct QuarantinedEvent: Sendable, Hashable, Codable {
    public var projection: String
    public var seq: UInt64
    public var reason: String
}

extension EventStoreError {
    /// Wraps any error thrown below the facade into an ``EventStoreError``.
    static func wrap(_ error: any Error, _ context: String) -> EventStoreError {
        switch error {
        case let e as EventStoreError: return e
        case let e as StorageError: return EventStoreError(code: .storage, message: context, cause: e)
        case is Envelope.Malformed: return .corrupted("\(context): a stored event does not decode")
        case is ByteReader.Truncated: return .corrupted("\(context): stored bytes are truncated")
        default: return EventStoreError(code: .invalidArgument, message: "\(context): \(error)")
        }
    }
}
