public import EventStore
import Foundation

/// The versions of one file in a git repository, read with the git command line: `git log` for
/// the commits that touched it, one `git cat-file --batch` process for their contents (a
/// process per history, not per commit). The git CLI rather than libgit2: no C library to link
/// for everyone, it is on every machine that has the repository, and a long `cat-file --batch`
/// streams blobs about as fast as the store takes them.
public struct GitHistory: Sendable {
    public enum DateKind: String, Sendable, CaseIterable {
        /// When the change was made (`%at`): what a scraper's commit says the API said then.
        case author
        /// When it was committed (`%ct`).
        case committer
    }

    /// One commit that touched the file.
    public struct Commit: Sendable, Hashable {
        public var id: String
        public var date: Timestamp
    }

    public var repository: String
    public var path: String
    /// Only commits after this revision (as `git log SINCE..`).
    public var since: String?
    /// Up to this revision (default `HEAD`).
    public var until: String?
    public var date: DateKind
    /// The git executable.
    public var git: String

    public init(repository: String, path: String, since: String? = nil, until: String? = nil, date: DateKind = .author, git: String = "git") {
        self.repository = repository; self.path = path; self.since = since; self.until = until; self.date = date; self.git = git
    }

    /// Every commit that touched the file, oldest first (first-parent order broken by date
    /// ties as git lists them).
    public func commits() throws(FetchError) -> [Commit] {
        let range = (since.map { "\($0).." } ?? "") + (until ?? "HEAD")
        let format = date == .author ? "%H %at" : "%H %ct"
        let out = try run(["log", "--reverse", "--format=\(format)", range, "--", path])
        return String(decoding: out, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let seconds = Int64(parts[1]) else { return nil }
            return Commit(id: String(parts[0]), date: Timestamp(microseconds: seconds * 1_000_000))
        }
    }

    /// The file's content at each commit, in order, as snapshots observed at the commit's date and
    /// keyed by commit id; a commit that deleted the file gives an empty body (the import records
    /// it as a failure). One `git cat-file --batch` process serves them all.
    public func snapshots(_ commits: [Commit]) -> AsyncThrowingStream<Snapshot, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Snapshot, any Error>.makeStream(bufferingPolicy: .bufferingOldest(16))
        let this = self
        let thread = Thread {
            do {
                try this.catFile(commits) { commit, body in
                    let snapshot = Snapshot(
                        url: "git:\(this.repository):\(this.path)", body: body ?? [], recordedAt: commit.date,
                        idempotencyKey: "git:\(commit.id):\(this.path)", metadata: [("commit", commit.id)])
                    // Back-pressure: wait while the importer is 16 snapshots behind.
                    while case .dropped = continuation.yield(snapshot) { Thread.sleep(forTimeInterval: 0.002) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.start()
        return stream
    }

    /// Streams `commit:path` blobs through one `git cat-file --batch`.
    private func catFile(_ commits: [Commit], _ body: (Commit, [UInt8]?) throws -> Void) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [git, "-C", repository, "cat-file", "--batch"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            throw FetchError(code: .source, message: "cannot run git (\(error)); install it with `apt-get install -y git`", url: repository)
        }
        // Requests are written from another thread so a full pipe never deadlocks the reader.
        let writer = Thread { [path] in
            for c in commits {
                try? input.fileHandleForWriting.write(contentsOf: Data("\(c.id):\(path)\n".utf8))
            }
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        var reader = LineReader(output.fileHandleForReading)
        defer {
            try? output.fileHandleForReading.close()
            process.waitUntilExit()
        }
        for c in commits {
            guard let header = try reader.line() else {
                throw FetchError(code: .source, message: "git cat-file stopped early", url: repository)
            }
            let parts = header.split(separator: " ")
            if parts.count == 3, parts[1] == "blob", let size = Int(parts[2]) {
                let blob = try reader.bytes(size)
                _ = try reader.bytes(1)  // the newline after the content
                try body(c, blob)
            } else {
                try body(c, nil)  // "missing": the commit deleted the file
            }
        }
    }

    /// Runs git in the repository; its output, or a ``FetchError`` with git's message.
    private func run(_ arguments: [String]) throws(FetchError) -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [git, "-C", repository] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            throw FetchError(code: .source, message: "cannot run git (\(error)); install it with `apt-get install -y git`", url: repository)
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let first = message.split(separator: "\n").first.map(String.init) ?? "exit \(process.terminationStatus)"
            throw FetchError(
                code: .source, message: "git \(arguments.first ?? ""): \(first) (is \(repository) a git repository, and are --since/--until revisions in it?)",
                url: repository)
        }
        return [UInt8](data)
    }
}

/// Buffered reads of lines and counted bytes from a pipe.
struct LineReader {
    let handle: FileHandle
    var buffer: [UInt8] = []
    var start = 0

    init(_ handle: FileHandle) { self.handle = handle }

    private mutating func fill() throws -> Bool {
        let chunk = handle.availableData
        guard !chunk.isEmpty else { return false }
        if start > 0 { buffer.removeFirst(start); start = 0 }
        buffer += chunk
        return true
    }

    mutating func line() throws -> String? {
        while true {
            if let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[start..<nl], as: UTF8.self)
                start = nl + 1
                return line
            }
            guard try fill() else { return nil }
        }
    }

    mutating func bytes(_ n: Int) throws -> [UInt8] {
        while buffer.count - start < n {
            guard try fill() else { throw FetchError(code: .truncated, message: "git cat-file output ended early", url: "") }
        }
        let out = Array(buffer[start..<(start + n)])
        start += n
        return out
    }
}
