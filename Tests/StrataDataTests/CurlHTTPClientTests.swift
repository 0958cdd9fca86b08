import FixtureServer
import Foundation
import StrataData
import Testing

/// The libcurl client against the real fixture server on 127.0.0.1.
@Suite struct CurlHTTPClientTests {
    let client = CurlHTTPClient()

    /// A client released at once, before its loop thread has run, shuts down cleanly (its thread
    /// once read a deinitializing client through a checked unowned reference and trapped).
    @Test func clientsReleasedAtOnceShutDownCleanly() {
        for _ in 0..<300 { _ = CurlHTTPClient() }
    }

    @Test func getsABodyWithItsETagAndHonoursIfNoneMatch() async throws {
        try await withFixtureServer { server in
            let r = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers"))
            #expect(r.status == 200)
            #expect(r.headers["content-type"] == "application/json")
            let etag = try #require(r.headers["etag"])
            #expect(String(decoding: r.body, as: UTF8.self).contains("\"results\""))
            let again = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers", headers: [("If-None-Match", etag)]))
            #expect(again.status == 304 && again.body.isEmpty)
        }
    }

    @Test func pagesCarryLinkHeaders() async throws {
        try await withFixtureServer { server in
            let r = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers?page=1&size=10"))
            #expect(r.headers["link"] == "</cars/offers?page=2&size=10>; rel=\"next\"")
        }
    }

    @Test func serverErrorsAreResponsesNotThrows() async throws {
        try await withFixtureServer { server in
            server.setFault(.serverError, for: "/cars")
            let r = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers"))
            #expect(r.status == 500)
            server.setFault(.tooManyRequests, for: "/cars")
            let t = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers"))
            #expect(t.status == 429 && t.headers["retry-after"] == "1")
        }
    }

    @Test func transportFaultsThrowClearErrors() async throws {
        try await withFixtureServer { server in
            server.slowSeconds = 2
            server.setFault(.slow, for: "/cars")
            await #expect { _ = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers", timeout: 0.3)) } throws: {
                ($0 as? FetchError)?.code == .timeout
            }
            server.setFault(.redirectLoop, for: "/cars")
            await #expect { _ = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers")) } throws: {
                ($0 as? FetchError)?.code == .redirects
            }
            server.hugeBytes = 4 << 20
            server.setFault(.huge, for: "/cars")
            await #expect { _ = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers", maxBytes: 1 << 20)) } throws: {
                ($0 as? FetchError)?.code == .tooLarge
            }
            server.setFault(.truncated, for: "/cars")
            await #expect { _ = try await client.send(HTTPRequest(url: server.baseURL + "/cars/offers")) } throws: {
                ($0 as? FetchError)?.code == .truncated
            }
            // A closed loopback port: connection refused.
            let closed = server.baseURL.replacingOccurrences(of: ":\(server.port)", with: ":1")
            await #expect { _ = try await client.send(HTTPRequest(url: closed + "/x")) } throws: {
                ($0 as? FetchError)?.code == .connection
            }
        }
    }

    @Test func fileURLsOnlyWhenAllowed() async throws {
        let path = fixturesRoot + "/notes/v1/notes.json"
        let r = try await client.send(HTTPRequest(url: "file://" + path, allowFileScheme: true))
        #expect(r.status == 200 && r.body.count > 100)
        await #expect { _ = try await client.send(HTTPRequest(url: "file://" + path)) } throws: {
            ($0 as? FetchError)?.code == .invalidURL
        }
    }

    @Test func manyConcurrentRequestsReuseHandles() async throws {
        try await withFixtureServer { server in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 1...40 { group.addTask { try await client.send(HTTPRequest(url: server.baseURL + "/pokedex/pokemon/\(i % 16 + 1)")).status } }
                for try await status in group { #expect(status == 200) }
            }
        }
    }

    /// A batch keeps `concurrency` requests in flight and never more, delivers each request once,
    /// and runs a request again when asked to.
    @Test func batchesKeepTheirConcurrencyAndDeliverEachRequestOnce() async throws {
        try await withFixtureServer { server in
            server.slowSeconds = 0.05
            server.setFault(.slow, for: "/pokedex/pokemon/")
            let batch = client.transfers((0..<24).map { HTTPRequest(url: server.baseURL + "/pokedex/pokemon/\($0 % 12 + 1)") }, concurrency: 3)
            var seen: [Int: Int] = [:]
            var retried = false
            for await group in batch {
                for c in group {
                    seen[c.index, default: 0] += 1
                    #expect((try? c.result.get())?.status == 200)
                    if c.index == 5 && !retried {
                        retried = true
                        batch.retryLater(5)
                        batch.resubmit(5)
                    }
                }
            }
            #expect(seen.count == 24 && seen[5] == 2 && seen.values.filter { $0 == 1 }.count == 23)
            #expect(server.peakInFlight == 3)
        }
    }

    /// A nudge wakes the reader with an empty group, whether it is waiting or comes to read
    /// later, and never hides the end of the batch or a completion.
    @Test func aNudgeWakesTheReaderWithNoCompletions() async throws {
        try await withFixtureServer { server in
            server.slowSeconds = 0.5
            server.setFault(.slow, for: "/pokedex/pokemon/")
            let batch = client.transfers((1...2).map { HTTPRequest(url: server.baseURL + "/pokedex/pokemon/\($0)") }, concurrency: 2)
            // Before the reader asks: its next read returns at once, empty.
            batch.nudge()
            let iterator = batch.makeAsyncIterator()
            let early = ContinuousClock.now
            #expect(await iterator.next()?.isEmpty == true)
            #expect(ContinuousClock.now - early < .milliseconds(400))
            // While it waits: woken before the slow responses, empty.
            let nudger = Task {
                try await Task.sleep(for: .milliseconds(50)); batch.nudge()
            }
            #expect(await iterator.next()?.isEmpty == true)
            try await nudger.value
            // Then the two completions, and the end, with a nudge pending at the end.
            var got = 0
            while let group = await iterator.next() {
                got += group.count
                if got == 2 { batch.nudge() }
                if got > 2 { break }
            }
            #expect(got == 2)
        }
    }

    /// Cancelling a batch, or the task reading it, ends it: nothing more starts, and the client
    /// keeps working.
    @Test func aCancelledBatchStartsNothingMore() async throws {
        try await withFixtureServer { server in
            server.slowSeconds = 0.05
            server.setFault(.slow, for: "/pokedex/pokemon/")
            func started() -> Int { (1...12).reduce(0) { $0 + server.requests(to: "/pokedex/pokemon/\($1)") } }
            let urls = (0..<200).map { HTTPRequest(url: server.baseURL + "/pokedex/pokemon/\($0 % 12 + 1)") }
            let batch = client.transfers(urls, concurrency: 2)
            var got = 0
            for await group in batch {
                got += group.count
                if got >= 2 { batch.cancel() }
            }
            #expect(got >= 2 && got < 10)
            let (firstGroup, signal) = AsyncStream<Void>.makeStream()
            let reader = Task {
                var n = 0
                for await group in client.transfers(urls, concurrency: 2) {
                    n += group.count
                    signal.yield()
                }
                return n
            }
            for await _ in firstGroup { break }
            reader.cancel()
            let read = await reader.value
            #expect(read > 0 && read < 40)
            // Of the 400 requests queued, only those started before each cancel reached the
            // server (given time for any already sent to arrive).
            try await Task.sleep(for: .milliseconds(300))
            #expect(started() < 60)
            #expect(try await client.send(HTTPRequest(url: server.baseURL + "/pokedex/pokemon/1")).status == 200)
        }
    }
}
