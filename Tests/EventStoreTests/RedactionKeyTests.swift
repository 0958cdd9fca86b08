import EventStore
import Foundation
import Testing

/// The store's redaction key: made once, kept across opens and copies, sealed in an encrypted
/// store, and an older store's key file adopted so its placeholders stay equal.
@Suite struct RedactionKeyTests {
    @Test(arguments: [false, true]) func theKeyIsMadeOnceAndKeptAcrossOpensAndCopies(encrypted: Bool) async throws {
        let dir = makeTempDir("redaction")
        let storeKey = encrypted ? StoreKey.generate() : nil
        var options = testOptions()
        options.key = storeKey
        let first: [UInt8]
        do {
            let store = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
            first = try await store.redactionKey()
            #expect(first.count == 32)
            #expect(try await store.redactionKey() == first)
            _ = try await store.append(
                NewEvent(type: "DocumentRecorded", stream: "s", metadata: [("collection", "c"), ("key", "1")], payload: Array("{}".utf8)))
            let copy = try await store.copy(into: makeTempDir("redaction-copy"), key: encrypted ? StoreKey.generate() : nil)
            #expect(try await copy.redactionKey() == first, "a copy (rekey) keeps the key")
        }
        let reopened = try await EventStore.open(at: dir, projections: [KeyedDocumentProjection()], options: options)
        #expect(try await reopened.redactionKey() == first)
        if encrypted {
            // Sealed: the key's bytes are nowhere in the file.
            let file = [UInt8](FileManager.default.contents(atPath: dir + "/data.mdb") ?? Data())
            #expect(Data(file).range(of: Data(first)) == nil)
        }
    }

    @Test func aKeyFileBesideAnOlderStoreIsAdopted() async throws {
        let dir = makeTempDir("redaction-legacy")
        let legacy = [UInt8](repeating: 7, count: 32)
        do { _ = try await openStore(dir) }
        try Data(legacy).write(to: URL(fileURLWithPath: dir + "/" + EventStore.legacyRedactionKeyFile))
        let store = try await openStore(dir)
        #expect(try await store.redactionKey() == legacy)
        #expect(!FileManager.default.fileExists(atPath: dir + "/" + EventStore.legacyRedactionKeyFile), "the file is gone once the key is in the store")
    }
}
