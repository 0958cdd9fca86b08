/// Which key a history's placeholders are made with, as its log records it: the key's check
/// (16 hex digits from which the key cannot be had), from `seq` on.
package struct RedactionKeyRecord: Sendable, Hashable {
    package var seq: UInt64
    package var check: String
    /// Why it was recorded: `first use`, `installed` or `rotated`.
    package var reason: String
    package init(seq: UInt64, check: String, reason: String) { self.seq = seq; self.check = check; self.reason = reason }
}

/// The store's redaction key beside what its history records.
package struct RedactionKeyStatus: Sendable, Hashable {
    /// The check of the key this store holds.
    package var check: String
    /// The newest record of the history; nil before anything was redacted.
    package var recorded: RedactionKeyRecord?
    package init(check: String, recorded: RedactionKeyRecord?) { self.check = check; self.recorded = recorded }
    /// Whether this store may redact into its history: its key is the recorded one, or none is.
    package var matches: Bool { recorded.map { $0.check == check } ?? true }
}
