import Foundation
import LMDB

extension EventStore {
    /// Copies the whole log into the store at `directory`, created under `key` (nil: without
    /// encryption), folding its projections there: the first step of ``rekey``. Resumable: a
    /// copy stopped part-way (a killed process) goes on from its head. The copy has the same
    /// events with the same seqs, ids and envelope hashes; only how they are stored differs.
    /// - Throws: ``EventStoreError`` when `directory` holds another history or a store under
    ///   another key.
    public func copy(into directory: String, key: StoreKey?, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws -> EventStore {
        var opts = StoreOptions()
        opts.durability = options.durability
        opts.clock = options.clock
        opts.logger = options.logger
        opts.mapSize = max(options.mapSize, environment.usedBytes * 2)
        opts.key = key
        opts.deltaKeyframeInterval = options.deltaKeyframeInterval
        let target = try await EventStore.open(at: directory, projections: projections, options: opts)
        try await copyRedactionKey(into: target)
        // Before the log: the copy folds what it copies, and an erased body must fold as erased.
        try await copyRewrites(into: target)
        try await copyLog(into: target, progress: progress)
        return target
    }

    /// Copies the log up to `seq` into a new store at `directory` under the store's own key (an
    /// encrypted store's copy shares its key), folding its projections there: the start of a
    /// store that replaces this one (``swap(with:mark:carrying:when:)``). Opened with the store's
    /// durability, so the copy is as safe on disk as the store.
    public func copy(upTo seq: UInt64, into directory: String) async throws -> EventStore {
        var opts = StoreOptions()
        opts.durability = options.durability
        opts.clock = options.clock
        opts.logger = options.logger
        opts.mapSize = max(options.mapSize, environment.usedBytes * 2)
        opts.copyOf = schema.cipher
        opts.deltaKeyframeInterval = options.deltaKeyframeInterval
        let target = try await EventStore.open(at: directory, projections: projections, options: opts)
        try await copyRedactionKey(into: target)
        try await copyRewrites(into: target)
        try await copyLog(upTo: seq, into: target)
        return target
    }

    /// A copy keeps the store's redaction key, so its placeholders stay the store's.
    private func copyRedactionKey(into target: EventStore) async throws {
        let schema = self.schema
        guard let key = try await read({ txn in try schema.redactionKey(txn) }) else { return }
        _ = try await target.writer.ensureRedactionKey(key)
    }

    /// Runs `body` holding the log's write lock (no process appends meanwhile) with the log's
    /// head: for swapping a finished copy in place of the store.
    public func holdingWriteLock<T>(_ body: (_ headSeq: UInt64, _ headHash: String) throws -> T) throws -> T {
        let txn = try environment.begin(readOnly: false)
        defer { txn.abort() }
        let head = try LogHead.read(txn, schema)
        return try body(head.seq, head.hash.hex)
    }
}
