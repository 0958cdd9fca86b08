package import StrataDomain
package import ChildProcess
import EventStore
import Foundation
package import StrataData

/// ``ArchiveRepository`` through the data layer's ``Fetcher`` (snapshots appended as list
/// passes) and ``GitHistory`` (the git command line).
package struct GitAndFilesArchiveRepository: ArchiveRepository {
    let fetcher: Fetcher
    let catalog: SourceCatalog
    let runner: ChildProcessRunner

    package init(fetcher: Fetcher, catalog: SourceCatalog, runner: ChildProcessRunner) {
        self.fetcher = fetcher
        self.catalog = catalog
        self.runner = runner
    }

    package func importHistory(
        source name: String, from origin: HistoryOrigin,
        progress: (@Sendable (Int) -> Void)?
    ) async throws -> ImportResult {
        let definition = try await catalog.required(name)
        var report: (@Sendable (FetchProgress) -> Void)?
        if let progress { report = { @Sendable p in progress(p.done) } }
        do {
            let summary: ImportSummary
            switch origin {
            case .files(let paths, let observedAt):
                var files: [(path: String, body: [UInt8])] = []
                for path in paths {
                    guard let data = FileManager.default.contents(atPath: path) else {
                        throw RepositoryError(.notFound, "cannot read \(path); check the path")
                    }
                    files.append((path, [UInt8](data)))
                }
                summary = try await fetcher.importSnapshots(definition, files: files, recordedAt: observedAt.map(Timestamp.init))
            case let .git(repository, path, since, until, committerDate):
                let git = GitHistory(
                    repository: repository, path: path, since: since, until: until, date: committerDate ? .committer : .author, runner: runner)
                let commits = try await git.commits()
                guard !commits.isEmpty else {
                    throw RepositoryError(.notFound, "no commit of \(repository) touches \(path)", next: .checkGitImport)
                }
                summary = try await fetcher.importSnapshots(definition, snapshots: git.snapshots(commits), skipInvalid: true, progress: report)
            }
            return ImportResult(
                source: name, imported: summary.imported, alreadyImported: summary.alreadyImported, failed: summary.failed,
                failures: summary.failures, bytes: summary.bytes, backfilled: summary.backfilled, added: summary.added,
                changed: summary.changed, removed: summary.removed, seconds: summary.seconds)
        } catch let e as RedactionKeyError {
            throw e.repositoryError()
        } catch let e as FetchError {
            throw RepositoryError(.invalidQuery, "source \(name): \(e.message) (\(e.url))", next: e.nextStep(source: name), cause: e)
        }
    }
}
