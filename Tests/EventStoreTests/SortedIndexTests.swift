@testable import EventStore
import Foundation
import Testing

/// The sorted index keeps every present document under its value's sort key; a page walked
/// through it equals sorting the present documents, through random puts, removals and
/// reappearances of numbers, strings, booleans, null, containers and missing values.
@Suite struct SortedIndexTests {
    enum Key: Comparable {
        case number(Double), text([UInt8])
        static func < (a: Key, b: Key) -> Bool {
            switch (a, b) {
            case let (.number(x), .number(y)): x < y
            case let (.text(x), .text(y)): x.lexicographicallyPrecedes(y)
            case (.number, .text): true
            case (.text, .number): false
            }
        }
    }

    static func key(_ v: JSONValue?) -> Key? {
        switch v {
        case .number(let n)?: .number(Double(n)!)
        case .string(let s)?: .text(Array(s.utf8))
        case .bool(let b)?: .text(Array((b ? "true" : "false").utf8))
        case .null?: .text(Array("null".utf8))
        default: nil
        }
    }

    /// The order the index must give: valued documents by key then natural id (all reversed when
    /// descending), then the rest by natural id.
    static func expected(_ states: [DocumentState], descending: Bool) -> [String] {
        func idPrecedes(_ a: String, _ b: String) -> Bool {
            KeyedDocumentProjection.naturalKey(a).lexicographicallyPrecedes(KeyedDocumentProjection.naturalKey(b))
        }
        let present = states.filter { !$0.removed }
        var valued = present.compactMap { s in key(s.document.value(atPath: "v")).map { (s.key, $0) } }
            .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : idPrecedes($0.0, $1.0) }.map(\.0)
        if descending { valued.reverse() }
        let rest = present.filter { key($0.document.value(atPath: "v")) == nil }.map(\.key).sorted(by: idPrecedes)
        return valued + rest
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func pagesEqualSortingThePresentDocuments(seed: UInt64) async throws {
        let projection = KeyedDocumentProjection(name: "documents", version: 1) { event, ctx in
            if event.type == "Index" { return [.index(collection: "c", paths: ["other", "v"])] }
            guard let body = try ctx.payload(of: event) else { return [.remove(collection: "c", key: event[metadata: "key"]!)] }
            return [.putJSON(collection: "c", key: event[metadata: "key"]!, json: body)]
        }
        let store = try await openStore(projections: [projection])
        var rng = SplitMix64(seed: seed)
        let values = [
            "1", "-2.5", "10", "1e3", "0", "-0", "\"apple\"", "\"Apple\"", "\"\"", "\"b\"", "\"10\"", "true", "false", "null",
            "[1]", "{\"x\":1}", "\"é\"", "\"" + String(repeating: "long", count: 80) + "\""
        ]
        var n = 0
        func event(_ type: String, key: String? = nil, body: String? = nil) -> NewEvent {
            n += 1
            return NewEvent(id: "\(n)", type: type, stream: "s", metadata: key.map { [("key", $0)] } ?? [], payload: body.map(bytes))
        }
        _ = try await store.append(event("Index"))
        for round in 0..<6 {
            var batch: [NewEvent] = []
            for _ in 0..<40 {
                let key = ["1", "2", "10", "007", "a", "b", "k\(rng.next() % 20)", "\(rng.next() % 30)"][Int(rng.next() % 8)]
                if rng.next() % 5 == 0 {
                    batch.append(event("Remove", key: key))
                } else if rng.next() % 6 == 0 {
                    batch.append(event("Put", key: key, body: "{\"other\":1}"))
                } else {
                    batch.append(event("Put", key: key, body: "{\"v\":\(values[Int(rng.next() % UInt64(values.count))])}"))
                }
            }
            _ = try await store.append(batch)
            let states = try await allStates(store)
            for descending in [false, true] {
                let want = Self.expected(states, descending: descending)
                let all = try await store.documents { try $0.sortedKeys(collection: "c", path: "v", descending: descending, limit: .max) }
                #expect(all == want, "round \(round) descending \(descending)")
                for offset in [0, 3, want.count - 1, want.count + 1] where offset >= 0 {
                    let page = try await store.documents { try $0.sortedKeys(collection: "c", path: "v", descending: descending, offset: offset, limit: 5) }
                    #expect(page == Array(want.dropFirst(offset).prefix(5)))
                }
                for (i, key) in want.enumerated() {
                    let page = try await store.documents { try $0.sortedKeys(collection: "c", path: "v", descending: descending, after: key, limit: 4) }
                    #expect(page == Array(want.dropFirst(i + 1).prefix(4)), "after \(key)")
                }
            }
        }
        #expect(try await store.documents { try $0.sortedKeys(collection: "c", path: "nope", limit: 5) } == nil)
        #expect(try await store.verify().ok)
    }
}
