import Foundation
import LMDB

extension EventStore {
    /// Writes a compacted copy of the store into `directory` (created; it must not exist) and
    /// opens it with the store's options: one read snapshot, without the pages that transactions
    /// freed (LMDB reuses them but never gives them back to the file system), each table's
    /// entries appended in key order so its pages are full (``Environment/copyPacked(to:)``). The copy holds the same events, bodies and
    /// projection rows, byte for byte; an encrypted store's copy stays under its key. Swap it in
    /// with ``swap(with:mark:carrying:when:)``, comparing its head.
    public func compactedCopy(into directory: String) async throws -> EventStore {
        try await compactedCopy(into: directory, envelopesByColumn: true)
    }

    /// ``compactedCopy(into:)``; `envelopesByColumn` false writes row-wise envelope blocks, as
    /// format 8 to 10 did (a test's older store).
    package func compactedCopy(into directory: String, envelopesByColumn: Bool) async throws -> EventStore {
        let fm = FileManager.default
        guard !fm.fileExists(atPath: directory) else {
            throw EventStoreError(code: .storage, message: "\(directory) exists already; remove it first")
        }
        do {
            try fm.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            if let packer = try await envelopePacker(byColumn: envelopesByColumn) {
                let repack = EnvelopeRepack(packer: packer, schema: schema, capacity: environment.largestInlineValue(schema.events, keyCount: 8))
                let rewrite: [String: Environment.PackRewrite] = schema.sealedChain != nil ? ["sealed-chain": repack.link] : [:]
                try environment.copyPacked(
                    to: directory, rewrite: rewrite, produce: ["events": repack.envelopes], additions: ["meta": repack.metaEntries()])
            } else {
                try environment.copyPacked(to: directory)
            }
        } catch {
            try? fm.removeItem(atPath: directory)
            throw EventStoreError.wrap(error, "could not write a compacted copy at \(directory)")
        }
        return try await EventStore.open(at: directory, projections: projections, options: options)
    }

    /// A packer with a dictionary trained on a sample of the log's envelopes (without their
    /// previous hashes and hashes), spread evenly over it: runs of ``EnvelopePacker/sampleRun``
    /// by column (what its blocks compress), or single envelopes when not `byColumn`; nil for a
    /// log too short to train on.
    func envelopePacker(byColumn: Bool = true) async throws -> EnvelopePacker? {
        let schema = self.schema
        let samples = try await read { txn -> [[UInt8]] in
            let count = Int(try LogHead.read(txn, schema).seq)
            guard count >= EnvelopePacker.minimumEnvelopes else { return [] }
            let run = byColumn ? EnvelopePacker.sampleRun : 1
            let runs = min(count, EnvelopePacker.sampleLimit) / run
            var out: [[UInt8]] = []
            out.reserveCapacity(runs)
            // Positions i·count/runs: no stride a log's repeating pattern of types could share.
            for i in 0..<runs {
                let first = UInt64(i * count / runs + 1)
                var envelopes: [[UInt8]] = []
                for seq in first..<min(first + UInt64(run), UInt64(count) + 1) {
                    guard let plain = try schema.envelope(at: seq, txn), plain.count > 64 else { break }
                    envelopes.append([UInt8](plain))
                }
                if run > 1, envelopes.count > 1, let columns = EnvelopeColumns.encode(envelopes, first: first) {
                    out.append(columns)
                } else {
                    // What packing compresses: an envelope without its hashes.
                    out += envelopes.map { [UInt8]($0.dropLast(64)) }
                }
            }
            return out
        }
        return EnvelopePacker(samples: samples, byColumn: byColumn)
    }
}
