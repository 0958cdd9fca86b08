/// The engine's interface to a log of events, whichever holds it: a store's LMDB log
/// (``EventStore``) or a team's shared log on PostgreSQL (`PostgresTeamLog`). What reads or
/// appends events through it (the event log repository, `strata log`, copies between logs) does
/// not know which one it talks to.
///
/// Both give every event a gapless seq in append order, chain every event to the one before by a
/// hash (each log its own chain: the seqs and hashes of one event differ between a store and the
/// team log, its id, type, times, stream, metadata and body do not), store each body once by
/// its SHA-256, and append an event whose id they hold already as a no-op that returns the
/// original seq.
public protocol EventLog: Sendable {
    /// The last seq and its chain hash (hex); 0 when empty.
    func head() async throws -> (seq: UInt64, hash: String)
    /// Events matching `query`, in seq order (newest first when `query.descending`).
    func events(_ query: EventQuery) async throws -> [RecordedEvent]
    /// The event with this id, if any.
    func event(id: String) async throws -> RecordedEvent?
    /// The body of an event; nil if it has none.
    func payload(of event: RecordedEvent) async throws -> [UInt8]?
    /// A body by its SHA-256 (hex); nil if absent.
    func body(sha256 hex: String) async throws -> [UInt8]?
    /// The last seq whose event was recorded at or before `time` (0 if none).
    func seq(asOf time: Timestamp) async throws -> UInt64
    /// Appends a batch in order, atomically; an event whose id the log holds is not appended
    /// again (its outcome has the original seq and `appended` false).
    func append(_ events: [NewEvent]) async throws -> [AppendOutcome]
}

extension EventStore: EventLog {}
