import Crypto
public import EventStore
import Foundation

/// The redaction key as the team's history knows it. Placeholders are keyed, so two nodes
/// redacting one history must hold one key: the key itself is a file the team hands around, as
/// the encryption key is, never in the log; the log records which key it was redacted with, as a
/// check (16 hex digits of HMAC-SHA256(key, a fixed text), from which the key cannot be had) in a
/// `RedactionKeyRecorded` event, pushed and pulled like any other. Before a body is redacted the
/// store's key is compared with the newest check: a node holding another key is refused
/// (``RedactionKeyError``) instead of recording every redacted value as changed. The first
/// redaction of a history records its key; installing the team's key or rotating to a new one
/// records it too, so a rotation is a fact of the history with its seq.
public struct RedactionKeyLedger: Sendable {
    /// The stream of `RedactionKeyRecorded` events.
    public static let stream = "redaction"
    public static let eventType = DataEvents.redactionKeyRecorded

    let store: EventStore

    public init(store: EventStore) { self.store = store }

    /// A key named without giving it away.
    public static func check(_ key: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("strata redaction key check".utf8), using: SymmetricKey(data: key))
        return mac.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// One `RedactionKeyRecorded`: which key the history is redacted with from `seq` on.
    public struct Record: Sendable, Hashable {
        public var seq: UInt64
        public var check: String
        /// `first use`, `installed` or `rotated`.
        public var reason: String

        public init(seq: UInt64, check: String, reason: String) { self.seq = seq; self.check = check; self.reason = reason }

        /// The record an event is; nil for another event.
        public init?(_ event: RecordedEvent) {
            guard event.type == RedactionKeyLedger.eventType, let check = event[metadata: "check"] else { return nil }
            self.init(seq: event.seq, check: check, reason: event[metadata: "reason"] ?? "")
        }
    }

    /// The newest record; nil before the history's first redaction.
    public func latest() async throws -> Record? {
        try await store.events(EventQuery(type: Self.eventType, limit: 1, descending: true)).first.flatMap(Record.init)
    }

    /// Every record, oldest first.
    public func all() async throws -> [Record] {
        try await store.events(EventQuery(type: Self.eventType)).compactMap(Record.init)
    }

    /// Whether this history may be pushed after `team`, the newest record of the log it is
    /// pushed to: it records the same key, or rotated away from that key here. Otherwise its
    /// placeholders are made with a key the team does not hold.
    /// - Throws: ``RedactionKeyError`` when it may not.
    public func confirmPush(after team: Record?) async throws {
        guard let team, let mine = try await latest(), mine.check != team.check else { return }
        if mine.reason == "rotated", try await all().contains(where: { $0.check == team.check && $0.seq < mine.seq }) { return }
        throw RedactionKeyError.pushRefused(mine: mine, team: team)
    }

    /// The key to redact with: the store's, once it is the one the history was redacted with
    /// (recorded as such on first use).
    /// - Throws: ``RedactionKeyError`` when the history was redacted with another key.
    public func confirmedKey() async throws -> [UInt8] {
        let key = try await store.redactionKey()
        let check = Self.check(key)
        guard let latest = try await latest() else {
            try await record(check, reason: "first use")
            return key
        }
        guard latest.check == check else { throw RedactionKeyError.mismatch(held: check, history: latest) }
        return key
    }

    /// The store's key (made on first use), for handing to another node.
    public func key() async throws -> [UInt8] { try await store.redactionKey() }

    /// Makes `key` the store's redaction key. Refused when the history was redacted with another
    /// key (that is a rotation); recorded when the history has no key yet.
    /// - Returns: the record in force afterwards, and whether this call appended it.
    public func install(_ key: [UInt8]) async throws -> (record: Record, recorded: Bool) {
        let check = Self.check(key)
        if let latest = try await latest() {
            guard latest.check == check else { throw RedactionKeyError.otherKeyRecorded(installing: check, history: latest) }
            try await store.replaceRedactionKey(key)
            return (latest, false)
        }
        try await store.replaceRedactionKey(key)
        return (try await record(check, reason: "installed"), true)
    }

    /// Replaces the key with `key` (nil: 32 new random bytes) and records it: later redactions
    /// use it, and the next fetch of a redacted source re-stores its values under it.
    public func rotate(to key: [UInt8]?) async throws -> Record {
        let fresh = key ?? SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let check = Self.check(fresh)
        if let latest = try await latest(), latest.check == check { throw RedactionKeyError.sameKey(latest) }
        try await store.replaceRedactionKey(fresh)
        return try await record(check, reason: "rotated")
    }

    @discardableResult
    private func record(_ check: String, reason: String) async throws -> Record {
        let outcome = try await store.append(
            NewEvent(type: Self.eventType, stream: Self.stream, metadata: [("check", check), ("reason", reason)]))
        return Record(seq: outcome.seq, check: check, reason: reason)
    }
}

/// The store's redaction key is not the one its history was redacted with, or an install or
/// rotation does not fit the history.
public struct RedactionKeyError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable { case mismatch, otherKeyRecorded, pushRefused, sameKey }
    public var kind: Kind
    public var message: String
    public var description: String { message }

    static func mismatch(held: String, history: RedactionKeyLedger.Record) -> RedactionKeyError {
        RedactionKeyError(
            kind: .mismatch,
            message:
                "this store's redaction key (check \(held)) is not the one its history is redacted with (check \(history.check), recorded at seq \(history.seq)); nothing was stored"
        )
    }

    static func otherKeyRecorded(installing: String, history: RedactionKeyLedger.Record) -> RedactionKeyError {
        RedactionKeyError(
            kind: .otherKeyRecorded,
            message:
                "this history is redacted with another key (check \(history.check), recorded at seq \(history.seq)) than the file's (check \(installing))"
        )
    }

    static func pushRefused(mine: RedactionKeyLedger.Record, team: RedactionKeyLedger.Record) -> RedactionKeyError {
        RedactionKeyError(
            kind: .pushRefused,
            message:
                "this store redacted with another key (check \(mine.check), seq \(mine.seq)) than the team log's (check \(team.check), its seq \(team.seq)); nothing was pushed: its placeholders would not match the team's"
        )
    }

    static func sameKey(_ history: RedactionKeyLedger.Record) -> RedactionKeyError {
        RedactionKeyError(kind: .sameKey, message: "the history is redacted with this key already (check \(history.check), recorded at seq \(history.seq))")
    }
}
