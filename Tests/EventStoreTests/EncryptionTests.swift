import Crypto
@testable import EventStore
import Foundation
import LMDB
import Logging
import Testing

/// An encrypted store reads like a store without a key, holds no plaintext, refuses a wrong or
/// missing key without changing anything, and its chain is checked without the key.
@Suite struct EncryptionTests {
    static func options(_ key: StoreKey?) -> StoreOptions {
        var o = testOptions()
        o.key = key
        return o
    }

    /// Long, distinctive texts in ids, keys, URLs, values and bodies, so any 16 bytes of them
    /// found in the file are a leak.
    static func events(count: Int) -> [NewEvent] {
        var rng = SplitMix64(seed: 29)
        var out: [NewEvent] = []
        for i in 0..<count {
            let k = "customer-record-\(Int.random(in: 0..<20, using: &rng))-zq"
            let doc =
                "{\"id\":\"\(k)\",\"city\":\"Ouagadougou-\(Int.random(in: 0..<3, using: &rng))\",\"notes\":\"a plaintext sentence that must never reach the disk \(i % 5)\",\"n\":\(i % 7)}"
            if i % 9 == 8 {
                out.append(
                    NewEvent(
                        id: "removal-event-identifier-\(i)", type: DocumentEvents.removed, stream: "people",
                        metadata: [("collection", "people"), ("key", k)]))
            } else {
                out.append(
                    NewEvent(
                        id: "document-event-identifier-\(i)", type: DocumentEvents.recorded, stream: "people",
                        metadata: [("collection", "people"), ("key", k), ("url", "https://private.example.test/api/people/\(k)")],
                        payload: Array(doc.utf8)))
            }
        }
        // One URL whose versions chain as deltas.
        for v in 0..<6 { out.append(DeltaChainTests.page(v, url: "https://private.example.test/api/catalogue-listing")) }
        return out
    }

    /// Every 16-byte window of `needles` that occurs in `file`.
    static func leaks(in file: [UInt8], of needles: [String]) -> [String] {
        var windows: [[UInt8]: String] = [:]
        for n in needles {
            let b = Array(n.utf8)
            guard b.count >= 16 else { continue }
            for i in 0...(b.count - 16) { windows[Array(b[i..<(i + 16)])] = n }
        }
        var found: Set<String> = []
        guard file.count >= 16 else { return [] }
        for i in 0...(file.count - 16) {
            if let n = windows[Array(file[i..<(i + 16)])] { found.insert(n) }
        }
        return found.sorted()
    }

    @Test func anEncryptedStoreReadsLikeAPlainOneAndHoldsNoPlaintext() async throws {
        let key = StoreKey.generate()
        let (plainDir, sealedDir) = (makeTempDir("plain"), makeTempDir("sealed"))
        let plain = try await EventStore.open(at: plainDir, projections: [KeyedDocumentProjection()], options: Self.options(nil))
        let sealed = try await EventStore.open(at: sealedDir, projections: [KeyedDocumentProjection()], options: Self.options(key))
        #expect(sealed.isEncrypted && !plain.isEncrypted)
        let events = Self.events(count: 120)
        for chunk in stride(from: 0, to: events.count, by: 25) {
            let batch = Array(events[chunk..<min(chunk + 25, events.count)])
            _ = try await plain.append(batch)
            _ = try await sealed.append(batch + [batch[0]])  // a duplicate id is found through its digest
        }
        let head = try await sealed.head().seq
        #expect(head == (try await plain.head().seq))
        // Reads: documents now and as of every tenth seq, history, pages, the index-free scans.
        for seq in stride(from: UInt64(1), through: head, by: 10) {
            let a = try await plain.documents { try $0.states(collection: "people", asOf: seq).map(\.document) }
            let b = try await sealed.documents { try $0.states(collection: "people", asOf: seq).map(\.document) }
            #expect(Set(a) == Set(b), "as of \(seq)")
            let pa = try await plain.documents { try $0.page(collection: "people", asOf: seq, limit: 100).map(\.key) }
            let pb = try await sealed.documents { try $0.page(collection: "people", asOf: seq, limit: 100).map(\.key) }
            #expect(pa == pb, "page as of \(seq)")
            let qa = try await plain.documents { try $0.page(collection: "people", asOf: seq, after: "customer-record-12-zq", offset: 0, limit: 3).map(\.key) }
            let qb = try await sealed.documents { try $0.page(collection: "people", asOf: seq, after: "customer-record-12-zq", offset: 0, limit: 3).map(\.key) }
            #expect(qa == qb, "page after an id as of \(seq)")
        }
        let ha = try await plain.documents { try $0.history(collection: "people", key: "customer-record-3-zq") }
        let hb = try await sealed.documents { try $0.history(collection: "people", key: "customer-record-3-zq") }
        #expect(ha == hb && !ha.isEmpty)
        let ea = try await plain.events(EventQuery())
        let eb = try await sealed.events(EventQuery())
        #expect(ea.map(\.id) == eb.map(\.id) && ea.map(\.payload) == eb.map(\.payload))
        // verify with the key: chain, bodies, projections against a rebuild (an encrypted scratch).
        let report = try await sealed.verify()
        #expect(report.ok, "\(report.problems) \(report.projections.flatMap(\.differences))")
        try sealed.environment.sync()

        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sealedDir + "/data.mdb")))
        var needles = events.map(\.id) + events.compactMap { $0.payload.map { String(decoding: $0, as: UTF8.self) } }
        needles += events.flatMap { $0.metadata.map(\.value) }
        #expect(Self.leaks(in: file, of: needles).isEmpty, "plaintext found: \(Self.leaks(in: file, of: needles).prefix(3))")
        // The same check finds the texts in the plain store, so it can fail.
        try plain.environment.sync()
        let plainFile = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plainDir + "/data.mdb")))
        #expect(!Self.leaks(in: plainFile, of: needles).isEmpty)
        // The chain checks without the key.
        let chain = try EventStore.verifyChain(at: sealedDir)
        #expect(chain.problemCount == 0 && chain.headSeq == head)
    }

    @Test func aMissingOrWrongKeyIsRefusedAndChangesNothing() async throws {
        let dir = makeTempDir()
        do {
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: Self.options(StoreKey.generate()))
            _ = try await store.append(Self.events(count: 10))
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb"))
        for key in [nil, StoreKey.generate()] {
            await #expect { _ = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: Self.options(key)) } throws: {
                ($0 as? EventStoreError)?.code == .encryption
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb")) == before)
        // A key given for a store without encryption is refused too.
        let plainDir = makeTempDir("plain")
        _ = try await EventStore.open(at: plainDir, projections: [], options: Self.options(nil))
        await #expect { _ = try await EventStore.open(at: plainDir, projections: [], options: Self.options(StoreKey.generate())) } throws: {
            ($0 as? EventStoreError)?.code == .encryption
        }
    }

    @Test func aChangedSealedByteIsFoundWithAndWithoutTheKey() async throws {
        let dir = makeTempDir()
        let key = StoreKey.generate()
        var store: EventStore? = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: Self.options(key))
        _ = try await store!.append(Self.events(count: 30))
        // Flip one byte inside the sealed envelope of seq 7.
        try store!.environment.write { txn in
            let k = UInt64(7).bigEndianBytes
            var raw = try #require(try k.withUnsafeBytes { try txn.getRaw(store!.schema.events, key: $0) }.map { [UInt8]($0) })
            raw[raw.count / 2] ^= 0x20
            _ = try k.withUnsafeBytes { k in try raw.withUnsafeBytes { try txn.putRaw(store!.schema.events, key: k, value: $0) } }
        }
        let report = try await store!.verify(checkProjections: false)
        #expect(report.problems.contains { $0.contains("event 7") })
        store = nil
        let chain = try EventStore.verifyChain(at: dir)
        #expect(chain.problems.contains { $0.contains("event 7") })
    }

    /// `copy(into:key:)` (rekey's first step) stopped part-way goes on from the copy's head, and
    /// gives the same events, hashes and documents under the new key.
    @Test func aCopyUnderANewKeyResumesAndMatches() async throws {
        let source = try await EventStore.open(at: makeTempDir(), projections: [KeyedDocumentProjection()], options: Self.options(StoreKey.generate()))
        _ = try await source.append(Self.events(count: 200))
        let newKey = StoreKey.generate()
        let dir = makeTempDir("copy")
        do {
            var o = Self.options(newKey)
            o.logger.logLevel = .critical
            let partial = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: o)
            try await source.copyLog(upTo: 77, into: partial)
            #expect(try await partial.head().seq == 77)
        }
        let copy = try await source.copy(into: dir, key: newKey)
        #expect(try await copy.head() == (try await source.head()))
        #expect(try await copy.events(EventQuery()).map(\.hash) == (try await source.events(EventQuery()).map(\.hash)))
        let a = try await source.documents { try $0.states(collection: "people", includeRemoved: true) }
        let b = try await copy.documents { try $0.states(collection: "people", includeRemoved: true) }
        #expect(a == b)
        #expect(try await copy.verify().ok)
        // Another history in the target directory is refused.
        let other = try await EventStore.open(at: makeTempDir("other"), projections: [KeyedDocumentProjection()], options: Self.options(nil))
        _ = try await other.append(Self.events(count: 5).reversed())
        await #expect(throws: EventStoreError.self) { _ = try await other.copy(into: dir, key: newKey) }
    }

    /// Stores made since record version 2 keep a v7 id's time in front of its digest (new ids
    /// land at the right edge of `ids`); stores of version 1 digest ids whole and keep working:
    /// found by id, duplicates refused, verified, copied into the new layout.
    @Test func bothLayoutsOfDigestedIDsFindEveryEvent() async throws {
        let key = StoreKey.generate()
        var salt = [UInt8](repeating: 7, count: 16)
        salt[0] = 1
        var old = Self.options(nil)
        old.copyOf = StoreCipher(key: key, salt: salt, version: 1)
        for (dir, options) in [(makeTempDir("v1"), old), (makeTempDir("v2"), Self.options(key))] {
            var events = Self.events(count: 30)
            let callers = events.count
            for i in 0..<30 {
                events.append(NewEvent(type: DocumentEvents.removed, stream: "people", metadata: [("collection", "people"), ("key", "gone-\(i)")]))
            }
            do {
                let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
                _ = try await store.append(Array(events[..<40]))
                _ = try await store.append(Array(events[40...]) + [events[3], events[35]])
            }
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: Self.options(key))
            #expect(try await store.head().seq == UInt64(events.count), "duplicates were refused through the digest")
            for (i, e) in events.enumerated() {
                #expect(try await store.event(id: e.id)?.seq == UInt64(i + 1), "\(dir): \(e.id)")
            }
            #expect(try await store.event(id: "0190f5c2-1111-7aaa-8bbb-cccccccccccc") == nil)
            let report = try await store.verify()
            #expect(report.ok, "\(report.problems)")
            let keys = try store.environment.read { txn in
                var out: [[UInt8]] = []
                let c = try txn.cursor(store.schema.ids, raw: true)
                var e = try c.first()
                while let entry = e { out.append(Array(entry.key)); e = try c.next() }
                return out
            }
            #expect(keys.count == events.count)
            if store.schema.cipher!.version == 1 {
                #expect(keys.allSatisfy { $0.count == 16 })
            } else {
                #expect(keys.allSatisfy { $0.count == 22 })
                // The made ids' times, in order, in front; the callers' ids sort first with zeros.
                let made = Set(events[callers...].map { store.schema.ids.storedKey(Array($0.id.utf8)) })
                #expect(made.allSatisfy { $0.prefix(6) != [0, 0, 0, 0, 0, 0] })
                #expect(keys.filter { !made.contains($0) }.allSatisfy { $0.prefix(6) == [0, 0, 0, 0, 0, 0] })
                let times = events[callers...].map { Array(store.schema.ids.storedKey(Array($0.id.utf8)).prefix(6)) }
                #expect(times == times.sorted { $0.lexicographicallyPrecedes($1) })
            }
        }
    }

    /// The primitives called per value are the standard constructions: what `AESGCMKey` seals
    /// opens with swift-crypto's `AES.GCM`, what it opens was sealed there, a changed byte or
    /// associated data is refused, and `HMACSHA256Key` equals `HMAC<SHA256>` for keys and
    /// messages of every length around the block size.
    @Test func thePrimitivesAreStandardAESGCMHMACAndSHA256() throws {
        var rng = SplitMix64(seed: 30)
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        let key = bytes(32)
        let aead = AESGCMKey(key: key)
        for size in [0, 1, 15, 16, 17, 255, 4096] {
            let plain = bytes(size), nonce = bytes(12), aad = bytes(size % 40)
            var sealed = [UInt8](repeating: 0, count: size + 16)
            plain.withUnsafeBytes { p in
                nonce.withUnsafeBytes { n in
                    aad.withUnsafeBytes { a in
                        sealed.withUnsafeMutableBytes { aead.seal(p, nonce: n, aad: a, into: $0) }
                    }
                }
            }
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed[..<size], tag: sealed[size...])
            #expect(Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: aad)) == plain)

            let theirs = try AES.GCM.seal(plain, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce), authenticating: aad)
            let combined = Array(theirs.ciphertext) + Array(theirs.tag)
            func opens(_ c: [UInt8], _ a: [UInt8]) -> [UInt8]? {
                var out = [UInt8](repeating: 0, count: size)
                let ok = c.withUnsafeBytes { cb in
                    nonce.withUnsafeBytes { n in
                        a.withUnsafeBytes { ab in
                            out.withUnsafeMutableBytes { aead.open(cb, nonce: n, aad: ab, into: $0) }
                        }
                    }
                }
                return ok ? out : nil
            }
            #expect(opens(combined, aad) == plain)
            var flipped = combined
            flipped[flipped.count / 2] ^= 0x01
            #expect(opens(flipped, aad) == nil)
            #expect(opens(combined, aad + [1]) == nil)
        }
        for keySize in [1, 32, 63, 64] {
            let macKey = bytes(keySize), mac = HMACSHA256Key(key: macKey)
            for size in [0, 1, 55, 56, 64, 65, 1000] {
                let message = bytes(size), split = size / 3
                var mine = [UInt8](repeating: 0, count: 32)
                message.withUnsafeBytes { m in
                    mine.withUnsafeMutableBytes {
                        mac.authenticate(UnsafeRawBufferPointer(rebasing: m[..<split]), UnsafeRawBufferPointer(rebasing: m[split...]), into: $0)
                    }
                }
                #expect(mine == Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: macKey))))
            }
        }
        // SHA-256 (`Hashing`, the sealed chain): FIPS 180-2's vectors, then swift-crypto's
        // `SHA256` for messages of every length around the block size, whole, in parts and cut
        // to a prefix.
        for (text, hex) in [
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            )
        ] {
            #expect(Hashing.sha256(Array(text.utf8)).hex == hex)
        }
        for size in [0, 1, 55, 56, 63, 64, 65, 1000] {
            let message = bytes(size), split = size / 3
            let theirs = Array(SHA256.hash(data: message))
            #expect(Hashing.sha256(message) == theirs)
            #expect(Hashing.sha256(message, prefix: 16) == Array(theirs.prefix(16)))
            var parts = Hashing.SHA256Parts()
            message.withUnsafeBytes { m in
                parts.update(UnsafeRawBufferPointer(rebasing: m[..<split]))
                parts.update(UnsafeRawBufferPointer(rebasing: m[split...]))
            }
            #expect(parts.finish() == theirs)
            let previous = bytes(32), envelope = bytes(size), body = bytes(size / 2), chunk = bytes(size / 3 + 1)
            var chained = SHA256()
            chained.update(data: previous)
            for part in [envelope, body, chunk] {
                chained.update(data: withUnsafeBytes(of: UInt64(part.count).bigEndian) { Array($0) })
                chained.update(data: part)
            }
            let link = envelope.withUnsafeBytes { e in
                body.withUnsafeBytes { b in chunk.withUnsafeBytes { c in SealedChain.digest(previous: previous, envelope: e, body: b, chunks: [c]) } }
            }
            #expect(link == Array(chained.finalize()))
        }
    }

    @Test func keyFilesAreWrittenOnceAndMustBePrivate() throws {
        let dir = makeTempDir()
        let path = dir + "/store.key"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let key = StoreKey.generate()
        try key.write(toNewFile: path)
        #expect(throws: EventStoreError.self) { try StoreKey.generate().write(toNewFile: path) }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        _ = try StoreKey.load(file: path)
        chmod(path, 0o644)
        #expect(throws: EventStoreError.self) { try StoreKey.load(file: path) }
    }
}
