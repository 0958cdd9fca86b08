import Foundation
import LMDB

/// The result of ``EventStore/verify()``.
public struct VerifyReport: Sendable {
    public var headSeq: UInt64 = 0
    public var eventsChecked: UInt64 = 0
    public var blobsChecked = 0
    /// Every integrity problem found (the first 1,000).
    public var problems: [String] = []
    public var problemCount = 0
    public var projections: [ProjectionCheck] = []
    public var quarantined: [QuarantinedEvent] = []
    /// Bodies rewritten in place by an erasure (``EventStore/rewriteBodies(_:by:)``), found
    /// consistent: the event's seq → its type and how many of the bodies it names were checked.
    public var rewrites: [UInt64: (type: String, bodies: Int)] = [:]

    public struct ProjectionCheck: Sendable {
        public var name: String
        public var checkpoint: UInt64
        public var matchesRebuild: Bool
        public var differences: [String]
        /// SHA-256 (hex) over the projection's tables as they read (table names, keys and
        /// values, in order): two stores that folded the same events in the same order give the
        /// same digest (replicas of a team log, tested); encrypted stores only under the same key
        /// (their keys are keyed digests).
        public var digest: String = ""
    }

    /// True when the chain, the blobs and every projection hold.
    public var ok: Bool { problemCount == 0 && projections.allSatisfy(\.matchesRebuild) }

    mutating func problem(_ p: String) {
        problemCount += 1
        if problems.count < 1_000 { problems.append(p) }
    }
}

extension EventStore {
    /// Checks the whole store: seqs gapless from 1, every envelope decodes and hashes to its stored
    /// hash, each links to its predecessor's hash, ids and indexes point at their events, every
    /// body exists and hashes to its key, and every projection equals a rebuild of it on a scratch
    /// copy. Reads one consistent snapshot; writers are not blocked.
    public func verify(checkProjections: Bool = true) async throws -> VerifyReport {
        let schema = self.schema
        var report = try await read { txn -> VerifyReport in
            var report = VerifyReport()
            try Self.checkEvents(txn, schema, &report)
            try Self.checkBodies(txn, schema, &report)
            return report
        }
        report.quarantined = try await quarantined()
        guard checkProjections, !projections.isEmpty else { return report }
        guard report.problemCount == 0 else {
            // A damaged log cannot be replayed faithfully; the log problems are the finding.
            report.projections = projections.map {
                .init(name: $0.name, checkpoint: 0, matchesRebuild: false, differences: ["not compared: the log itself is damaged (see above)"])
            }
            return report
        }
        report.projections = try await projectionsAgainstRebuild(upTo: report.headSeq)
        return report
    }

    /// Seqs gapless from 1; every envelope opens, decodes, hashes to its stored hash and links to
    /// its predecessor's; the id, stream, type and time indexes point at their events; every
    /// event's body is indexed; the sealed chain holds.
    static func checkEvents(_ txn: Transaction, _ schema: LogSchema, _ report: inout VerifyReport) throws {
        // Raw rows: in an encrypted store each envelope is opened here, so one that does not
        // open is reported instead of ending the check.
        let c = try txn.cursor(schema.events, raw: true)
        var expected: UInt64 = 1
        var previous = Envelope.zeroHash
        var entry = try c.first()
        // The stream and type indexes, a cursor per name, each staying in its row while the
        // walk does; the time index walked beside the log, each entry the event's effective
        // time (the running maximum of the times recorded so far).
        var cursors: [[String: IndexCursor]] = [[:], [:]]
        func indexes(_ db: Database, _ kind: Int, _ name: String, _ seq: UInt64) throws -> Bool {
            if cursors[kind][name] == nil { cursors[kind][name] = try IndexCursor(db, name: name, txn) }
            return try cursors[kind][name]!.contains(seq)
        }
        var times: TimeIndexWalk? = try TimeIndexWalk(schema, txn)
        var effective = Timestamp(microseconds: .min)
        // One event's checks, its envelope plain (`computed`: its hash was computed from its
        // bytes, as a packed envelope's or a block's are).
        func check(_ seq: UInt64, _ value: UnsafeRawBufferPointer?, computed: Bool) throws {
            defer { expected = seq + 1; report.eventsChecked += 1 }
            // A row that does not read cannot say where it begins (a block's first seq is inside).
            if seq != expected, value != nil { report.problem("seq gap: expected \(expected), found \(seq)") }
            // The time index's entry in this event's place (it stops being checked at its first
            // finding: after a gap every entry would be one).
            var timeEntry: (seq: UInt64, time: Timestamp)?
            if let walk = times {
                do {
                    timeEntry = try walk.next()
                    if timeEntry == nil {
                        report.problem("event \(seq): missing from the time index")
                        times = nil
                    }
                } catch {
                    report.problem("the time index: \(error)")
                    times = nil
                }
            }
            guard let value else { return }
            guard computed || Envelope.selfConsistent(value) else {
                report.problem("event \(seq): stored bytes do not match their hash (tampered or damaged)")
                previous = value.count >= 32 ? [UInt8](value[(value.count - 32)...]) : Envelope.zeroHash
                return
            }
            guard let event = try? Envelope.decode(value) else {
                report.problem("event \(seq): envelope does not decode")
                return
            }
            if event.seq != seq { report.problem("event \(seq): envelope says seq \(event.seq)") }
            if event.previousHash != previous { report.problem("event \(seq): hash chain broken (previous hash does not match event \(seq - 1))") }
            previous = event.hash
            if let s = try schema.withIDKey(event.id, { try txn.get(schema.ids, key: $0).map { UInt64(bigEndianBytes: $0) } }) {
                if s != seq { report.problem("event \(seq): id index points elsewhere") }
            } else {
                report.problem("event \(seq): id missing from the id index")
            }
            for (i, (db, name, kind)) in [(schema.byStream, event.stream, "stream"), (schema.byType, event.type, "type")].enumerated() {
                do {
                    if try !indexes(db, i, name, seq) { report.problem("event \(seq): missing from the \(kind) index") }
                } catch {
                    report.problem("event \(seq): the \(kind) index: \(error)")
                }
            }
            effective = max(effective, event.recordedAt)
            if let (s, t) = timeEntry, s != seq || t != effective {
                report.problem("event \(seq): the time index has seq \(s) at \(t.iso8601) where this event is, at \(effective.iso8601)")
                times = nil
            }
            if let ref = event.payload {
                // The index finds a body through the event that stored it first, whose
                // envelope may be the damaged one (in an encrypted store it then does not
                // open): a finding here, not the end of the check.
                do {
                    if try !schema.bodyIndex.contains(ref.hash, in: txn) { report.problem("event \(seq): body \(ref.hashHex.prefix(16)) is missing") }
                } catch {
                    report.problem("event \(seq): body \(ref.hashHex.prefix(16)) is indexed at an event that does not read (tampered or damaged)")
                }
            }
        }
        func checkRow(_ row: Cursor.Entry) throws {
            let seq = UInt64(bigEndianBytes: row.key)
            if row.key.count != 8 { report.problem("event key of \(row.key.count) bytes is not a seq") }
            guard let opened = try? txn.plainValue(schema.events, key: row.key, stored: row.value) else {
                report.problem("event \(seq): its sealed envelope does not open under the store's key (tampered or damaged)")
                try check(seq, nil, computed: false)
                return
            }
            try EnvelopeBlock.checkRow(
                seq, opened, dictionary: schema.envelopeDictionary, in: txn,
                unreadable: { problem in
                    report.problem(problem)
                    try check(seq, nil, computed: false)
                }
            ) { try check($0, $1, computed: $2) }
        }
        while let row = entry {
            try checkRow(row)
            entry = try c.next()
        }
        report.headSeq = expected - 1
        if let chain = schema.sealedChain {
            // The chain over the stored rows too (what `verify --chain-only` checks without the key).
            var outer = VerifyReport()
            try SealedChain.check(events: schema.events, bodies: schema.bodies, chain: chain, txn, &outer)
            for p in outer.problems { report.problem(p) }
        }
        if try txn.stat(schema.ids).entries != Int(report.eventsChecked) {
            report.problem("the id index has \(try txn.stat(schema.ids).entries) entries for \(report.eventsChecked) events")
        }
        for (db, name) in [(schema.byStream, "stream"), (schema.byType, "type"), (schema.byTime, "time")] {
            do {
                let n = try IndexBlocks.entries(db, txn)
                if n != Int(report.eventsChecked) { report.problem("the \(name) index has \(n) entries for \(report.eventsChecked) events") }
            } catch {
                report.problem("the \(name) index: \(error)")
            }
        }
    }

    /// Every stored body decodes (a delta through its chain) and hashes to the key that finds it,
    /// the event that stores it carries it, and the counters agree.
    static func checkBodies(_ txn: Transaction, _ schema: LogSchema, _ report: inout VerifyReport) throws {
        // Bodies found by a prefix of their hash: the seq's event stored the body, the body
        // hashes to the hash that event carries, and the key is its prefix.
        var pointers = 0
        // Every stored body decoded once, in seq order (so a delta chain decodes each link
        // once): its hash, or nil when it does not decode. A delta must point back to an
        // earlier body one link shallower, and its seal, its base's and the content hash of
        // every body it builds on are checked on the way.
        var hashes: [UInt64: [UInt8]?] = [:]
        let bases = DeltaBases(bodies: schema.bodies, txn: txn)
        let stored = try txn.cursor(schema.bodies, raw: true)
        var next = try stored.first()
        // Chunks of large bodies under a row of `bodies` (``ChunkTable``): any other is left over.
        var chunks = 0
        while let row = next {
            let seq = UInt64(bigEndianBytes: row.key)
            chunks += try txn.storedChunks(schema.bodies, storedKey: row.key).count
            do {
                let e = (key: row.key, value: try txn.plainValue(schema.bodies, key: row.key, stored: row.value))
                if BlobCodec.isDelta(e.value) {
                    let header = try DeltaHeader(e.value, checkSeal: true)
                    if header.base >= seq { report.problem("body at seq \(seq): its delta base \(header.base) is not earlier") }
                }
                hashes[seq] = Hashing.sha256(try bases.decode(e.value, seq: seq, context: nil, checkSeal: true))
            } catch {
                hashes[seq] = .some(nil)
            }
            next = try stored.next()
        }
        func decodedHash(_ seq: UInt64) throws -> [UInt8] {
            guard let known = hashes[seq], let hash = known else { throw ByteReader.Truncated() }
            return hash
        }
        /// A body that hashes to another digest than its event's: consistent only as a rewrite the
        /// `rewritten` table records and the chained event it names lists (original, now).
        func rewrite(of seq: UInt64, now: [UInt8], key: [UInt8]) throws -> (seq: UInt64, type: String)? {
            func event(_ s: UInt64) throws -> RecordedEvent? { try schema.event(at: s, txn) }
            guard let original = try event(seq)?.payload?.hash,
                schema.bodyIndex.index.storedKey(Array(original.prefix(schema.bodyIndex.prefix))) == key,
                let record = try schema.rewrite(of: original, txn), record.now == now,
                let event = try event(record.by)
            else { return nil }
            guard let ref = event.payload, let row = try ref.hash.withUnsafeBytes({ try schema.bodyIndex.stored(hash: $0, in: txn) }) else { return nil }
            let body = try DeltaBases(bodies: schema.bodies, txn: txn).decode(row, seq: 0, context: nil, checkSeal: true)
            guard Hashing.sha256(body) == ref.hash, let pairs = RewritePair.listed(in: body) else { return nil }
            return pairs.contains(RewritePair(original: original, now: now)) ? (record.by, event.type) : nil
        }
        let index = try txn.cursor(schema.bodyIndex.index)
        var row = try index.first()
        while let e = row {
            report.blobsChecked += 1
            pointers += 1
            let key = [UInt8](e.key)
            do {
                let seq = try BodyIndex.seq(e.value)
                if hashes[seq] != nil {
                    let hash = try decodedHash(seq)
                    if schema.bodyIndex.index.storedKey(Array(hash.prefix(schema.bodyIndex.prefix))) != key {
                        if let by = try rewrite(of: seq, now: hash, key: key) {
                            report.rewrites[by.seq, default: (by.type, 0)].bodies += 1
                        } else {
                            report.problem("body \(key.hex): content does not match its hash")
                        }
                    } else if try !hash.withUnsafeBytes({ try schema.bodyIndex.carries(seq, $0, txn) }) {
                        report.problem("body \(hash.hex.prefix(16)): event \(seq), which stores it, does not carry it")
                    }
                } else {
                    report.problem("body \(key.hex): points to seq \(seq), which holds no body")
                }
            } catch {
                report.problem("body \(key.hex): does not decode (damaged)")
            }
            row = try index.next()
        }
        // Rows of formats 1 and 2, and bodies whose prefix another body holds: by whole hash.
        let b = try txn.cursor(schema.blobs)
        var blob = try b.first()
        while let e = blob {
            report.blobsChecked += 1
            let key = [UInt8](e.key)
            do {
                let hash: [UInt8]
                if let seq = try BlobCodec.pointee(e.value) {
                    pointers += 1
                    guard hashes[seq] != nil else {
                        report.problem("body \(key.hex.prefix(16)): points to seq \(seq), which holds no body")
                        blob = try b.next()
                        continue
                    }
                    hash = try decodedHash(seq)
                } else {
                    hash = Hashing.sha256(try BlobCodec.decode(e.value, checkSeal: true))
                }
                if schema.blobs.storedKey(hash) != key { report.problem("body \(key.hex.prefix(16)): content does not match its hash") }
            } catch {
                report.problem("body \(key.hex.prefix(16)): does not decode (damaged)")
            }
            blob = try b.next()
        }
        let rows = try txn.stat(schema.bodies).entries
        if rows != pointers { report.problem("\(rows) stored bodies for \(pointers) hashes that point to one") }
        let chunkRows = try txn.chunkRows(schema.bodies)
        if chunkRows != chunks { report.problem("\(chunkRows) chunks of large bodies, \(chunkRows - chunks) of them under no stored body") }
        let counters = try Counters.read(txn, schema)
        if counters.blobCount != UInt64(report.blobsChecked) { report.problem("counters say \(counters.blobCount) bodies, found \(report.blobsChecked)") }
    }

    /// Each projection's tables, checkpoint and quarantine against a rebuild of it from the log
    /// up to `head` on a scratch copy.
    func projectionsAgainstRebuild(upTo head: UInt64) async throws -> [VerifyReport.ProjectionCheck] {
        let scratch = try await replay(upTo: head)
        defer { try? FileManager.default.removeItem(atPath: scratch.path) }
        let mine = self.schema
        let theirs = scratch.schema
        let scratchEnv = scratch.environment
        let names = projections.map(\.name)
        return try await read { txn in
            try scratchEnv.read { other in
                try names.map { name -> VerifyReport.ProjectionCheck in
                    var diffs: [String] = []
                    let cp = try Checkpoint.read(name, txn, mine)
                    let cp2 = try Checkpoint.read(name, other, theirs)
                    if cp != cp2 {
                        diffs.append(
                            "checkpoint \(cp.map { "v\($0.version)@\($0.seq)" } ?? "none") ≠ rebuilt \(cp2.map { "v\($0.version)@\($0.seq)" } ?? "none")")
                    }
                    let tables = mine.projectionTables[name]!.databases
                    for (table, db) in tables.sorted(by: { $0.key < $1.key }) {
                        diffs += try compare(txn, db, other, theirs.projectionTables[name]!.databases[table]!, label: table)
                    }
                    if let a = mine.projectionTables[name]!.names, let b = theirs.projectionTables[name]!.names {
                        diffs += try compare(txn, a, other, b, label: TableSet.namesTable)
                    }
                    var hasher = Hashing.SHA256Parts()
                    for (table, db) in tables.sorted(by: { $0.key < $1.key }) { try digest(txn, db, table, into: &hasher) }
                    let q1 = try quarantineKeys(txn, mine, name)
                    let q2 = try quarantineKeys(other, theirs, name)
                    if q1 != q2 { diffs.append("quarantine differs: \(q1.count) here, \(q2.count) in the rebuild") }
                    return .init(
                        name: name, checkpoint: cp?.seq ?? 0, matchesRebuild: diffs.isEmpty, differences: Array(diffs.prefix(20)),
                        digest: hasher.finish().hex)
                }
            }
        }
    }
}

private func quarantineKeys(_ txn: Transaction, _ s: LogSchema, _ name: String) throws -> [[UInt8]] {
    let prefix = Array(name.utf8) + [0]
    let c = try txn.cursor(s.quarantine)
    var out: [[UInt8]] = []
    var e = try c.seek(atLeast: prefix)
    while let entry = e, entry.key.hasPrefix(prefix) {
        out.append([UInt8](entry.key))
        e = try c.next()
    }
    return out
}

/// Feeds a table's name and every entry, length-prefixed, to `hasher`.
private func digest(_ txn: Transaction, _ db: Database, _ label: String, into hasher: inout Hashing.SHA256Parts) throws {
    Array(label.utf8).withUnsafeBytes { hasher.updateLengthPrefixed($0) }
    let c = try txn.cursor(db)
    var e = try c.first()
    while let entry = e {
        hasher.updateLengthPrefixed(entry.key)
        hasher.updateLengthPrefixed(entry.value)
        e = try c.next()
    }
}

/// Compares two tables entry by entry; returns up to 20 differences.
private func compare(_ a: Transaction, _ da: Database, _ b: Transaction, _ db: Database, label: String) throws -> [String] {
    let ca = try a.cursor(da)
    let cb = try b.cursor(db)
    var ea = try ca.first()
    var eb = try cb.first()
    var diffs: [String] = []
    func show(_ k: UnsafeRawBufferPointer) -> String {
        String(decoding: k.map { $0 == 0 ? UInt8(ascii: "/") : $0 }.prefix(60), as: UTF8.self)
    }
    while diffs.count < 20 {
        switch (ea, eb) {
        case (nil, nil):
            return diffs
        case let (x?, nil):
            diffs.append("\(label): extra entry \(show(x.key))"); ea = try ca.next()
        case let (nil, y?):
            diffs.append("\(label): missing entry \(show(y.key))"); eb = try cb.next()
        case let (x?, y?):
            if x.key.elementsEqual(y.key) {
                if !x.value.elementsEqual(y.value) { diffs.append("\(label): entry \(show(x.key)) differs from the rebuild") }
                ea = try ca.next(); eb = try cb.next()
            } else if x.key.lexicographicallyPrecedes(y.key) {
                diffs.append("\(label): extra entry \(show(x.key))"); ea = try ca.next()
            } else {
                diffs.append("\(label): missing entry \(show(y.key))"); eb = try cb.next()
            }
        }
    }
    return diffs
}
