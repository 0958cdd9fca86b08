import Foundation

/// Scratch paths for tests. Every path lies under one directory per test process, which is
/// removed when the process exits; a run that was killed leaves its directory behind, and the
/// next run removes it (its process is gone). So `make test` leaves nothing in the temp dir.
public enum TestScratch {
    /// A new path (not created) under this process's scratch directory, named `prefix-UUID`.
    public static func path(_ prefix: String) -> String {
        root + "/\(prefix)-\(UUID().uuidString)"
    }

    /// A new, empty directory.
    public static func directory(_ prefix: String) -> String {
        let dir = path(prefix)
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static let root: String = {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory.path
        // Directories of test processes that no longer run.
        for name in (try? fm.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix("strata-tests-") {
            guard let pid = Int32(name.dropFirst("strata-tests-".count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { try? fm.removeItem(atPath: tmp + "/" + name) }
        }
        let root = tmp + "/strata-tests-\(getpid())"
        try! fm.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        atexit { try? FileManager.default.removeItem(atPath: TestScratch.root) }
        return root
    }()
}
