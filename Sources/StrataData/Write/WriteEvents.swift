import EventStore
import Foundation

/// The event types of local writes and of their delivery (schema version 1). Every write is an
/// event on its source's stream; `write` in the metadata of the delivery events is the seq of the
/// write it is about, and the write's event id is the `Idempotency-Key` it is sent with.
///
/// | type | metadata | payload |
/// |---|---|---|
/// | `ItemCreatedLocally` | `source`, `key` (a local id), `user`, `session`? | `{"document"}` |
/// | `ItemPatchedLocally` | `source`, `key`, `user`, `session`?, `baseVersion`, `baseETag`? | `{"ops": [RFC 6902 with old values], "base": document}` |
/// | `ItemDeletedLocally` | `source`, `key`, `user`, `baseVersion`, `baseETag`? | `{"base": document}` |
/// | `EditStaged` | `source`, `key`, `user`, `session` | `{"ops", "base"}` (items untouched until accepted) |
/// | `EditSessionAccepted` | `session`, `user`, `writes` (count; appended in one batch with its `ItemPatchedLocally` events) | none |
/// | `EditSessionCancelled` | `session`, `user`, `edits` (count) | none |
/// | `WriteSent` | `source`, `key`, `write`, `attempt`, `method`, `url` | none |
/// | `WriteAcknowledged` | `source`, `key`, `write`, `status`, `etag`?, `serverId`? | the server's answer |
/// | `WriteRejected` | `source`, `key`, `write`, `status`?, `reason` | the server's answer |
/// | `WriteConflicted` | `source`, `key`, `write`, `status`, `etag`? (the server's) | `{"server": document, "paths": [...]}` |
/// | `WriteRebased` | `source`, `key`, `write`, `etag` (the version it is now based on) | none |
/// | `WriteFailed` | `source`, `key`, `write`, `attempt`, `error`, `status`? | none (still pending) |
/// | `WriteRetried` | `source`, `key`, `write`, `user`, `force`? (send over the conflicting version) | the write: `{"kind", "ops"?, "document"?}` |
/// | `WriteDropped` | `source`, `key`, `write`, `user` | none |
/// | `ConfigChanged` | `key` (stream `config`) | the value (JSON) |
public enum WriteEvents {
    public static let created = "ItemCreatedLocally"
    public static let patched = "ItemPatchedLocally"
    public static let deleted = "ItemDeletedLocally"
    public static let staged = "EditStaged"
    public static let sessionAccepted = "EditSessionAccepted"
    public static let sessionCancelled = "EditSessionCancelled"
    public static let sent = "WriteSent"
    public static let acknowledged = "WriteAcknowledged"
    public static let rejected = "WriteRejected"
    public static let conflicted = "WriteConflicted"
    public static let rebased = "WriteRebased"
    public static let failed = "WriteFailed"
    public static let retried = "WriteRetried"
    public static let dropped = "WriteDropped"
    public static let configChanged = "ConfigChanged"

    /// The three kinds of local write.
    public static let writes: Set<String> = [created, patched, deleted]
    /// Events that settle or change a write's place in the overlay.
    public static let outcomes: Set<String> = [acknowledged, rejected, conflicted, retried, dropped]
    /// Every type of this table.
    public static let all: Set<String> = writes.union(outcomes).union([staged, sessionAccepted, sessionCancelled, sent, rebased, failed, configChanged])

    /// The local id of an item created here, before the server names it.
    public static func localKey() -> String { "local-" + RandomID.uuid().prefix(13).lowercased() }
}

/// A write's kind.
public enum WriteKind: String, Sendable, Codable {
    case create, patch, delete

    public init?(eventType: String) {
        switch eventType {
        case WriteEvents.created: self = .create
        case WriteEvents.patched: self = .patch
        case WriteEvents.deleted: self = .delete
        default: return nil
        }
    }
}

/// Where a write is on its way to the server.
public enum WriteState: String, Sendable, Codable, CaseIterable {
    /// In the outbox, not sent yet or sent without an answer (a crash, a timeout): sent again.
    case pending
    /// Sent; the answer has not been recorded yet.
    case sent
    case acknowledged
    case rejected
    /// The server changed the touched fields meanwhile: both sides are kept until retried or dropped.
    case conflicted
    case dropped

    /// Still to be delivered (or decided): in the outbox and overlaid on reads.
    public var isOpen: Bool { self == .pending || self == .sent || self == .conflicted }
}
