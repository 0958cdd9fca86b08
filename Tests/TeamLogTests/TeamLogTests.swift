import EventStore
import FixtureServer
import Foundation
import Logging
import StrataData
import StrataTestSupport
import TeamLog
import TestScratch
import Testing

/// The team log against a real PostgreSQL started by the test.
@Suite(.serialized) struct TeamLogTests {
    static func logger() -> Logger {
        var l = Logger(label: "teamlog-test")
        l.logLevel = .critical
        return l
    }

    func open(_ server: PostgresServer) throws -> PostgresTeamLog {
        try PostgresTeamLog(location: TeamLogLocation(url: server.url), environment: [:], logger: Self.logger())
    }

    /// Node A fetches the fixture API through three versions and pushes; node B pulls: B's items,
    /// details and their histories equal A's at every seq, the global seq is gapless and its
    /// chain holds, and pushing or pulling again changes nothing.
    @Test func aPushedHistoryPulledIntoAnotherStoreReadsTheSameAtEverySeq() async throws {
        let server = try await offPoolThread { try PostgresServer() }
        let log = try open(server)
        let a = try await makeStore()
        try await withFixtureServer { fixture in
            let fetcher = Fetcher(store: a, client: CurlHTTPClient(), logger: quietLogger())
            var options = FetchOptions()
            options.details = true
            options.images = true
            options.timeout = 30
            options.environment = [:]
            for v in 1...3 {
                fixture.version = v
                let cars = SourceDefinition(
                    name: "cars", url: fixture.baseURL + "/cars/offers", items: "results", title: "make", subtitle: ["model"],
                    image: "image", pageParam: "page", pageSize: 10, index: ["make", "model"])
                _ = try await fetcher.fetch(cars, options: options)
            }
        }
        let headA = try await a.head().seq
        let pushed = try await log.push(from: a, node: "node-a", batch: 7)
        #expect(pushed.appended == Int(headA) && pushed.alreadyThere == 0 && pushed.headSeq == headA)
        #expect(pushed.bodiesUploaded > 0)
        #expect(try await log.verify().isEmpty)
        // Again: nothing new.
        let again = try await log.push(from: a, node: "node-a")
        #expect(again.appended == 0 && again.headSeq == headA)

        let b = try await makeStore()
        let pulled = try await log.pull(into: b, after: 0, batch: 11)
        #expect(pulled.appended == Int(headA) && pulled.position == headA)
        #expect(try await b.head().seq == headA)
        let none = try await log.pull(into: b, after: pulled.position)
        #expect(none.appended == 0 && none.position == headA)
        // The same events, in the same order, with the same bodies.
        let ea = try await a.events(EventQuery()), eb = try await b.events(EventQuery())
        #expect(ea.map(\.id) == eb.map(\.id) && ea.map(\.payload) == eb.map(\.payload) && ea.map(\.recordedAt) == eb.map(\.recordedAt))
        // The projections fold to the same documents at every seq.
        for projection in ["items", "details", "images"] {
            for seq in stride(from: UInt64(1), through: headA, by: 3) {
                let x = try await a.documents(projection: projection) { try $0.states(asOf: seq, includeRemoved: true) }
                let y = try await b.documents(projection: projection) { try $0.states(asOf: seq, includeRemoved: true) }
                #expect(x == y, "\(projection) as of \(seq)")
            }
        }
        // A pull into a store that holds the pushed events already (A) appends nothing.
        #expect(try await log.pull(into: a, after: 0).appended == 0)
        #expect(try await b.verify().ok)
        await log.close()
    }

    /// Two stores push their own events: the log holds both, gapless, each event once; each
    /// store pulls the other's.
    @Test func twoNodesPushTheirOwnEventsAndPullEachOthers() async throws {
        let server = try await offPoolThread { try PostgresServer() }
        let log = try open(server)
        let (a, b) = (try await makeStore(), try await makeStore())
        func doc(_ store: EventStore, _ n: Int, _ node: String) async throws {
            _ = try await store.append(
                (0..<n).map { i in
                    NewEvent(
                        id: "\(node)-\(i)", type: DocumentEvents.recorded, stream: node,
                        metadata: [("collection", node), ("key", "k\(i % 5)")], payload: Array("{\"n\":\(i),\"node\":\"\(node)\"}".utf8))
                })
        }
        try await doc(a, 30, "a")
        try await doc(b, 20, "b")
        async let pa = log.push(from: a, node: "a", batch: 4)
        async let pb = log.push(from: b, node: "b", batch: 3)
        let (ra, rb) = try await (pa, pb)
        #expect(ra.appended == 30 && rb.appended == 20)
        #expect(try await log.head().seq == 50)
        #expect(try await log.verify().isEmpty)
        let intoA = try await log.pull(into: a, after: 0)
        let intoB = try await log.pull(into: b, after: 0)
        #expect(intoA.appended == 20 && intoA.alreadyHere == 30)
        #expect(intoB.appended == 30 && intoB.alreadyHere == 20)
        // A pushes again: the events it pulled are the log's already; nothing is appended.
        let again = try await log.push(from: a, node: "a")
        let headAfter = try await log.head().seq
        #expect(again.appended == 0 && headAfter == 50)
        let da = try await a.documents { try $0.states(collection: "b") }
        let db = try await b.documents { try $0.states(collection: "b") }
        #expect(da.map(\.document) == db.map(\.document) && da.count == 5)
        await log.close()
    }

    /// A lease fences a source: while B holds it, A's new events of that source are refused
    /// (nothing of the batch is appended) even after A held it itself; `force` takes a live lease,
    /// an expired or released one is taken without it, renewing keeps the token, and a source
    /// nobody leased is open to all. The tokens of a source's events never go back.
    @Test func aLeaseFencesASourceAndTokensOnlyGrow() async throws {
        let server = try await offPoolThread { try PostgresServer() }
        let log = try open(server)
        let (a, b) = (try await makeStore(), try await makeStore())
        func add(_ store: EventStore, _ prefix: String, _ n: Int, stream: String = "books") async throws {
            _ = try await store.append((0..<n).map { NewEvent(id: "\(prefix)-\($0)", type: "Noted", stream: stream, payload: Array("\(prefix) \($0)".utf8)) })
        }
        let first = try await log.acquireLease(stream: "books", node: "a", ttl: 60, force: false)
        #expect(first == .init(token: 1, takenFrom: nil, forced: false))
        #expect(try await log.acquireLease(stream: "books", node: "a", ttl: 60, force: false).token == 1, "renewing keeps the token")
        try await add(a, "a1", 5)
        #expect(try await log.push(from: a, node: "a", leases: ["books": 1]).appended == 5)
        // B cannot take a live lease without force; with it, B's token is larger.
        await #expect { _ = try await log.acquireLease(stream: "books", node: "b", ttl: 60, force: false) } throws: { ($0 as? TeamLogError)?.code == .fenced }
        let taken = try await log.acquireLease(stream: "books", node: "b", ttl: 60, force: true)
        #expect(taken == .init(token: 2, takenFrom: "a", forced: true))
        // A's late events of books are refused whole; those of an unleased source go in.
        try await add(a, "a2", 4)
        await #expect { _ = try await log.push(from: a, node: "a", leases: ["books": 1], batch: 2) } throws: {
            ($0 as? TeamLogError)?.code == .fenced && "\($0)".contains("token 2")
        }
        #expect(try await log.head().seq == 5)
        await #expect { _ = try await log.push(from: a, node: "a", leases: [:]) } throws: { ($0 as? TeamLogError)?.code == .fenced }
        try await add(b, "b1", 3)
        try await add(b, "free", 2, stream: "films")
        #expect(try await log.push(from: b, node: "b", leases: ["books": 2]).appended == 5)
        let conflicts = try await log.unpushed(from: a, node: "a")
        #expect(conflicts == ["books": 4])
        // B releases: A takes the lease back without force, under a new token, and pushes.
        #expect(try await log.releaseLease(stream: "books", node: "b"))
        #expect(!(try await log.releaseLease(stream: "books", node: "c")))
        let back = try await log.acquireLease(stream: "books", node: "a", ttl: 60, force: false)
        #expect(back == .init(token: 3, takenFrom: "b", forced: false))
        #expect(try await log.push(from: a, node: "a", leases: ["books": 3]).appended == 4)
        #expect(try await log.verify().isEmpty)
        #expect(try server.psql("SELECT string_agg(coalesce(lease_token::text, '-'), ',' ORDER BY seq) FROM strata_events") == "1,1,1,1,1,2,2,2,-,-,3,3,3,3\n")
        let leases = try await log.leases()
        #expect(leases.map(\.stream) == ["books"] && leases[0].node == "a" && leases[0].token == 3 && leases[0].secondsLeft > 50)
        await log.close()
    }

    @Test func badInputGetsClearErrors() async throws {
        #expect(throws: TeamLogError.self) { try TeamLogLocation(url: "http://db/strata") }
        #expect(throws: TeamLogError.self) { try TeamLogLocation(url: "postgres://strata:hunter2@db/strata") }
        let templated = try TeamLogLocation(url: "postgres://strata:$TEAM_PW@db.example/strata")
        #expect(templated.passwordVariable == "TEAM_PW" && templated.sslMode == "require")
        // A refused connection: nobody listens on that socket.
        let nowhere = try PostgresTeamLog(
            location: TeamLogLocation(url: "postgres://strata@/strata?host=/tmp/strata-pg-none"), environment: [:], logger: Self.logger())
        await #expect { try await nowhere.head() } throws: { ($0 as? TeamLogError)?.code == .connection }
        await nowhere.close()
        // A schema from a newer Strata.
        let server = try await offPoolThread { try PostgresServer() }
        let log = try open(server)
        try await log.migrate()
        try server.psql("UPDATE strata_schema SET version = 99")
        let later = try open(server)  // as the next strata process would
        await #expect { try await later.head() } throws: { ($0 as? TeamLogError)?.code == .newerSchema }
        await later.close()
        // A row changed in the database breaks the chain, and a pull says so.
        try server.psql("UPDATE strata_schema SET version = 2")
        let a = try await makeStore()
        _ = try await a.append((0..<5).map { NewEvent(id: "e\($0)", type: "Noted", stream: "s", payload: Array("x\($0)".utf8)) })
        _ = try await log.push(from: a, node: "a")
        try server.psql("UPDATE strata_events SET stream = 'other' WHERE seq = 3")
        let b = try await makeStore()
        await #expect { _ = try await log.pull(into: b, after: 0) } throws: { ($0 as? TeamLogError)?.code == .corrupted }
        #expect(try await b.head().seq == 0)
        await log.close()
    }

    /// The team log and a store answer the same engine interface (`EventLog`) the same way: a
    /// store that pushed everything holds the log's events at the log's seqs, so every query
    /// gives the same events (ids, types, times, streams, metadata, bodies) on both, only the
    /// chain hashes differ; appends through the interface are idempotent by id on both.
    @Test func theTeamLogAndAStoreAnswerTheSameEngineInterface() async throws {
        let server = try await offPoolThread { try PostgresServer() }
        let log = try open(server)
        let a = try await makeStore()
        let base = Timestamp(microseconds: 1_700_000_000_000_000)
        var seed: [NewEvent] = []
        for i in 0..<40 {
            let removal = i % 3 == 0
            let type = removal ? DocumentEvents.removed : DocumentEvents.recorded
            let at = Timestamp(microseconds: base.microseconds + Int64(i) * 1_000_000)
            let body: [UInt8]? = removal ? nil : Array("{\"i\":\(i)}".utf8)
            seed.append(
                NewEvent(
                    id: "e\(i)", type: type, recordedAt: at, stream: i % 2 == 0 ? "even" : "odd",
                    metadata: [("collection", "c"), ("key", "k\(i % 7)")], payload: body))
        }
        _ = try await a.append(seed)
        _ = try await log.push(from: a, node: "a", batch: 7)
        let logs: [any EventLog] = [a, log]
        func same(_ q: EventQuery) async throws {
            let (x, y) = (try await a.events(q), try await log.events(q))
            func shape(_ e: RecordedEvent) -> String {
                "\(e.seq) \(e.id) \(e.type) \(e.schemaVersion) \(e.recordedAt.microseconds) \(e.stream) \(e.metadata) \(e.payload?.hashHex ?? "-") \(e.payload?.size ?? -1)"
            }
            #expect(x.map(shape) == y.map(shape), "\(q)")
            #expect(!x.isEmpty)
            // Each log chains its own: the hashes differ, every link holds within each.
            #expect(
                zip(y, y.dropFirst()).allSatisfy { q.descending ? $0.previousHash == $1.hash : $1.previousHash == $0.hash } || q.stream != nil || q.type != nil)
        }
        try await same(EventQuery())
        try await same(EventQuery(fromSeq: 5, toSeq: 30, limit: 9, descending: true))
        try await same(EventQuery(stream: "odd", limit: 6))
        try await same(EventQuery(type: DocumentEvents.removed, descending: true))
        try await same(EventQuery(stream: "even", type: DocumentEvents.recorded, fromSeq: 10))
        for l in logs {
            #expect(try await l.head().seq == 40)
            let e = try #require(try await l.event(id: "e4"))
            #expect(e.seq == 5 && e.stream == "even")
            #expect(try await l.payload(of: e) == Array("{\"i\":4}".utf8))
            #expect(try await l.body(sha256: e.payload!.hashHex) == Array("{\"i\":4}".utf8))
            #expect(try await l.event(id: "nope") == nil)
            #expect(try await l.body(sha256: String(repeating: "0", count: 64)) == nil)
            #expect(try await l.seq(asOf: Timestamp(microseconds: base.microseconds + 9_500_000)) == 10)
            #expect(try await l.seq(asOf: Timestamp(microseconds: base.microseconds - 1)) == 0)
            #expect(try await l.seq(asOf: Timestamp(microseconds: base.microseconds + 100_000_000)) == 40)
        }
        // Appends through the interface: new events get the next seqs; ids held come back with
        // their original seqs, on both logs alike.
        let more = [
            NewEvent(id: "e3", type: DocumentEvents.recorded, stream: "odd", metadata: [("collection", "c"), ("key", "k3")], payload: Array("{}".utf8)),
            NewEvent(
                id: "n1", type: DocumentEvents.recorded, recordedAt: base, stream: "odd", metadata: [("collection", "c"), ("key", "k1")],
                payload: Array("{\"new\":1}".utf8)),
            NewEvent(
                id: "n1", type: DocumentEvents.recorded, recordedAt: base, stream: "odd", metadata: [("collection", "c"), ("key", "k1")],
                payload: Array("{\"new\":1}".utf8))
        ]
        for l in logs {
            let outcomes = try await l.append(more)
            #expect(outcomes.map(\.seq) == [4, 41, 41] && outcomes.map(\.appended) == [false, true, false])
            #expect(try await l.head().seq == 41)
            let n = try #require(try await l.event(id: "n1"))
            #expect(try await l.payload(of: n) == Array("{\"new\":1}".utf8))
        }
        #expect(try await log.verify().isEmpty)
        // A store pulling the log gets the event appended through the interface.
        let b = try await makeStore()
        _ = try await log.pull(into: b, after: 0)
        #expect(try await b.event(id: "n1")?.seq == 41)
        await log.close()
    }
}
