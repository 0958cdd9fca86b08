package import ChildProcess
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
    let runner: ChildProcessRunner

    package init(
        repository: String, path: String, since: String? = nil, until: String? = nil, date: DateKind = .author, git: String = "git",
        runner: ChildProcessRunner
    ) {
        self.repository = repository; self.path = path; self.since = since; self.until = until; self.date = date; self.git = git
        self.runner = runner
    }

    /// Every commit that touched the file, oldest first (first-parent order broken by date
    /// ties as git lists them).
    public func commits() async throws(FetchError) -> [Commit] {
        let range = (since.map { "\($0).." } ?? "") + (until ?? "HEAD")
        let format = date == .author ? "%H %at" : "%H %ct"
        let out = try await run(["log", "--reverse", "--format=\(format)", range, "--", path])
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
        let task = Task {
            do {
                try await this.catFile(commits) { commit, body in
                    let snapshot = Snapshot(
                        url: "git:\(this.repository):\(this.path)", body: body ?? [], recordedAt: commit.date,
                        idempotencyKey: "git:\(commit.id):\(this.path)", metadata: [("commit", commit.id)])
                    // Back-pressure: wait while the importer is 16 snapshots behind.
                    while case .dropped = continuation.yield(snapshot) { try await Task.sleep(for: .milliseconds(2)) }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Streams `commit:path` blobs through one `git cat-file --batch`: the requests (a line per
    /// commit) are its input, the answers are read as they come.
    private func catFile(_ commits: [Commit], _ body: @escaping @Sendable (Commit, [UInt8]?) async throws -> Void) async throws {
        let path = self.path
        let (delivered, exit, errors): (Bool, ChildProcessRunner.Exit, [UInt8])
        do {
            (delivered, exit, errors) = try await runner.stream(
                .name(git), arguments: ["-C", repository, "cat-file", "--batch"],
                input: commits.flatMap { Array("\($0.id):\(path)\n".utf8) },
                body: { output in
                    var answers = CatFileAnswers(commits)
                    try await output.read { chunk in
                        try await answers.take(chunk, body)
                        return !answers.isDone
                    }
                    return answers.isDone
                })
        } catch let e as ChildProcessRunner.StartError {
            throw FetchError(code: .source, message: "\(e); install git with `apt-get install -y git`", url: repository)
        }
        guard delivered else {
            let why = String(decoding: errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw FetchError(code: .truncated, message: "git cat-file stopped early (\(exit)\(why.isEmpty ? "" : ": " + why))", url: repository)
        }
    }

    /// Runs git in the repository; its output, or a ``FetchError`` with git's message.
    private func run(_ arguments: [String]) async throws(FetchError) -> [UInt8] {
        let result: ChildProcessRunner.Collected
        do {
            result = try await runner.collect(.name(git), arguments: ["-C", repository] + arguments, outputLimit: 1 << 30)
        } catch {
            throw FetchError(code: .source, message: "\(error); install git with `apt-get install -y git`", url: repository)
        }
        guard result.exit.succeeded else {
            let first = result.errorText.split(separator: "\n").first.map(String.init) ?? "\(result.exit)"
            throw FetchError(
                code: .source,
                message: "git \(arguments.first ?? ""): \(first) (is \(repository) a git repository, and are the since and until revisions in it?)",
                url: repository)
        }
        return result.output
    }
}

/// `git cat-file --batch`'s answers, parsed from chunks as they arrive: for each request a
/// header line (`ID blob SIZE`, or `… missing`), then for a blob its bytes and a newline.
struct CatFileAnswers {
    private let commits: [GitHistory.Commit]
    private var next = 0
    private var buffer: [UInt8] = []
    private var start = 0
    /// The blob being read: its commit and size.
    private var pending: (commit: GitHistory.Commit, size: Int)?

    init(_ commits: [GitHistory.Commit]) { self.commits = commits }

    var isDone: Bool { next == commits.count && pending == nil }

    mutating func take(_ chunk: [UInt8], _ deliver: (GitHistory.Commit, [UInt8]?) async throws -> Void) async throws {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 1 << 20 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += chunk
        while true {
            if let (commit, size) = pending {
                guard buffer.count - start >= size + 1 else { return }
                let blob = Array(buffer[start..<(start + size)])
                start += size + 1  // the newline after the content
                pending = nil
                try await deliver(commit, blob)
                continue
            }
            guard next < commits.count, let nl = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) else { return }
            let header = String(decoding: buffer[start..<nl], as: UTF8.self)
            start = nl + 1
            let commit = commits[next]
            next += 1
            let parts = header.split(separator: " ")
            if parts.count == 3, parts[1] == "blob", let size = Int(parts[2]) {
                pending = (commit, size)
            } else {
                try await deliver(commit, nil)  // "missing": the commit deleted the file
            }
        }
    }
}
