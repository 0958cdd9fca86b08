import CLibraryLoader
import Foundation
import Testing

/// The libraries Strata opens on first use (libcurl, libsqlite3, the image libraries) may be
/// loading on another thread when a command ends (a fetch starts libcurl while it reads the
/// store, and may then fail at once: `strata fetch nope`). Exiting during a library's
/// initialization crashed the process (about one `fetch nope` in seven on the static build).
/// `strata_library_settle_all` waits for such loads; the entry calls it before every exit.
@Suite struct LibraryLoaderTests {
    /// What the slow load below marks, from C (a `@convention(c)` function captures nothing).
    nonisolated(unsafe) static var loaded = false
    nonisolated(unsafe) static var loading = false

    @Test func settlingWaitsForALoadThatAnotherThreadStarted() throws {
        // Never freed: like the loader's own (static) libraries, a loaded one stays in its list.
        let lib = UnsafeMutablePointer<strata_library>.allocate(capacity: 1)
        lib.initialize(to: strata_library())  // all zero: PTHREAD_ONCE_INIT on glibc
        let address = Int(bitPattern: lib)
        let load: @convention(c) () -> Void = {
            LibraryLoaderTests.loading = true
            usleep(300_000)
            LibraryLoaderTests.loaded = true
        }
        let thread = Thread { _ = strata_library_load(UnsafeMutablePointer(bitPattern: address), load) }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while !Self.loading && Date() < deadline { usleep(1_000) }
        #expect(Self.loading)
        #expect(!Self.loaded)
        strata_library_settle_all()
        #expect(Self.loaded, "settle returned while the load was still running")
        // A library that failed to open keeps its message, and settling again returns at once.
        let missing = UnsafeMutablePointer<strata_library>.allocate(capacity: 1)
        missing.initialize(to: strata_library())
        defer { missing.deallocate() }
        let name = strdup("libstrata-no-such-library.so.0")
        defer { free(name) }
        missing.pointee.soname = UnsafePointer(name)
        strata_library_open(missing, nil)
        var symbol: UnsafeMutableRawPointer?
        #expect(strata_library_resolve(missing, &symbol, "anything") == 0)
        #expect(symbol == nil)
        #expect(String(cString: try #require(missing.pointee.problem)).contains("libstrata-no-such-library.so.0"))
        strata_library_settle_all()
    }
}
