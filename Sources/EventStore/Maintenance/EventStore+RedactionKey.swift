import Crypto
import Foundation
import LMDB

/// The store's redaction key: 32 random bytes in `meta/redaction-key`, made on first use. The
/// placeholders that stand for redacted values and masked credentials are keyed by it, so equal
/// values give equal placeholders in this store and nobody without the store can tell which
/// value a placeholder stands for. It lives in the log's own environment: sealed like any other
/// value when the store is encrypted, copied by `compact` and `rekey`, and never part of an
/// export or of what is pushed to a team log.
extension EventStore {
    /// The file an earlier strata kept the key in, beside the log; adopted (and removed) when the
    /// key is first read, so placeholders made before stay equal.
    public static let legacyRedactionKeyFile = "redaction.key"

    /// The key's 32 bytes, made (or adopted from the legacy file) on first use.
    public func redactionKey() async throws -> [UInt8] {
        let schema = self.schema
        if let k = try await read({ txn in try schema.redactionKey(txn) }) { return k }
        let legacy = path + "/" + Self.legacyRedactionKeyFile
        let adopted = FileManager.default.contents(atPath: legacy).flatMap { $0.count == 32 ? [UInt8]($0) : nil }
        let key = try await writer.ensureRedactionKey(adopted ?? SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
        if adopted != nil { unlink(legacy) }
        return key
    }
}

extension LogSchema {
    static let redactionKeyName = Array("redaction-key".utf8)

    /// The stored key, opened when the store is encrypted; nil before the first use.
    func redactionKey(_ txn: Transaction) throws -> [UInt8]? {
        guard let stored = try txn.get(meta, key: Self.redactionKeyName) else { return nil }
        let plain =
            try cipher.map { c in
                try stored.withUnsafeBytes { s in try Self.redactionKeyName.withUnsafeBytes { try c.opened(s, domain: meta.domain, key: $0) } }
            } ?? [UInt8](stored)
        guard plain.count == 32 else {
            throw EventStoreError.corrupted("the store's redaction key (meta/redaction-key) is damaged; restore the store from a copy")
        }
        return plain
    }
}

extension LogWriter {
    /// Stores `fresh` as the redaction key unless one is there (another process may have made it
    /// meanwhile); returns the key that is.
    func ensureRedactionKey(_ fresh: [UInt8]) throws -> [UInt8] {
        try environment.write { txn in
            if let k = try schema.redactionKey(txn) { return k }
            let stored =
                schema.cipher.map { c in
                    fresh.withUnsafeBytes { p in LogSchema.redactionKeyName.withUnsafeBytes { c.sealed(p, domain: schema.meta.domain, key: $0) } }
                } ?? fresh
            try txn.put(schema.meta, key: LogSchema.redactionKeyName, value: stored)
            return fresh
        }
    }
}

extension EventStore {
    /// Makes `key` (32 bytes) the store's redaction key, replacing the one there: how a node takes
    /// its team's key, or a rotation its new one. What was redacted under the old key keeps its
    /// placeholders.
    public func replaceRedactionKey(_ key: [UInt8]) async throws {
        guard key.count == 32 else { throw EventStoreError(code: .invalidArgument, message: "a redaction key is 32 bytes; this one has \(key.count)") }
        try await writer.replaceRedactionKey(key)
    }
}

extension LogWriter {
    func replaceRedactionKey(_ key: [UInt8]) throws {
        try environment.write { txn in
            let stored =
                schema.cipher.map { c in
                    key.withUnsafeBytes { p in LogSchema.redactionKeyName.withUnsafeBytes { c.sealed(p, domain: schema.meta.domain, key: $0) } }
                } ?? key
            try txn.put(schema.meta, key: LogSchema.redactionKeyName, value: stored)
        }
    }
}
