@testable import EventStore
import Foundation
import StrataJSON
import Testing

/// A fold's bodies read ahead into one block (``BodyArena``): what the writer copies out must be
/// what a body of its own would give, for canonical and non-canonical JSON, text that is not
/// JSON, bodies shared by several events, and seqs outside the arena.
@Suite struct BodyArenaTests {
    static func put(_ arena: BodyArena, _ text: String, _ seq: UInt64, document: Bool = true) {
        let body = Array(text.utf8)
        #expect(body.withUnsafeBytes { arena.put(body: $0, for: seq) })
        if document { arena.prepareDocument(seq) }
    }

    @Test func bodiesAndTheirCanonicalFormsReadBackAsTheyWouldAlone() throws {
        // Room for almost nothing at first: every put after the first grows (moves) the block.
        let arena = BodyArena(from: 10, to: 20, reserving: 8)
        let canonical = #"{"a":1,"b":[true,null]}"#
        let loose = "{ \"b\" : [true, null],\n \"a\" : 1 }"
        Self.put(arena, canonical, 11)
        Self.put(arena, loose, 12)
        Self.put(arena, "not json", 13)
        Self.put(arena, String(repeating: "x", count: 100_000), 14, document: false)
        let stored: [UInt8] = [2, 9, 9, 9]
        stored.withUnsafeBytes { arena.put(stored: $0, for: 11) }

        for (seq, text) in [(UInt64(11), canonical), (12, loose)] {
            let body = Array(text.utf8)
            #expect(arena.body(seq) == body)
            #expect(arena.matches(seq, body) == true)
            let form = try JSONValue.canonicalize(body)
            let prepared = try #require(arena.document(seq, matching: body))
            #expect(prepared.canonical == form)
            #expect(prepared.digest == KeyedDocumentProjection.digest(form))
            #expect(arena.document(seq)?.canonical == form)
            // Another text under the same seq is not this body: nothing prepared for it.
            #expect(arena.document(seq, matching: body + [32]) == nil)
            #expect(arena.matches(seq, body + [32]) == false)
        }
        // A canonical body is its own form: only the digest was added after it.
        #expect(arena.stored(11) == stored)
        #expect(arena.stored(12) == nil)
        #expect(arena.body(13) == Array("not json".utf8))
        #expect(arena.document(13, matching: Array("not json".utf8)) == nil)
        #expect(arena.document(13) == nil)
        #expect(arena.body(14)?.count == 100_000)
        #expect(arena.document(14, matching: arena.body(14)!) == nil)
        // Seqs without a body, and outside (10, 20], are not here.
        #expect(arena.body(15) == nil)
        #expect(arena.matches(15, []) == nil)
        #expect(arena.body(10) == nil)
        #expect(arena.body(21) == nil)
        #expect(!Array("{}".utf8).withUnsafeBytes { arena.put(body: $0, for: 21) })
    }

    @Test func aSharedBodyIsKeptOnceAndCarriesItsForm() throws {
        let arena = BodyArena(from: 0, to: 4)
        let text = "{ \"k\": \"v\" }"
        Self.put(arena, text, 1)
        let used = arena.count
        arena.share(1, with: 3)
        #expect(arena.count == used)
        let body = Array(text.utf8)
        #expect(arena.body(3) == body)
        #expect(arena.document(3, matching: body)?.canonical == Array(#"{"k":"v"}"#.utf8))
        // Preparing a shared body again adds nothing.
        arena.prepareDocument(3)
        #expect(arena.count == used)
        // A stored form belongs to the event whose row it is, not to the events sharing its body.
        [UInt8](repeating: 7, count: 4).withUnsafeBytes { arena.put(stored: $0, for: 1) }
        arena.share(1, with: 4)
        #expect(arena.stored(1) != nil)
        #expect(arena.stored(4) == nil)
        // Sharing from a seq without a body leaves the slot empty.
        arena.share(2, with: 2)
        #expect(arena.body(2) == nil)
    }
}
