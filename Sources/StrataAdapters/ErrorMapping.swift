package import EventStore
package import StrataData
package import StrataDomain
import TeamLog

/// The layers below say what went wrong in their own terms (a store, a key, a definition's field);
/// here their typed facts become the Domain's next steps, which each front end words.
extension EventStoreError {
    package var nextStep: NextStep? {
        if code == .corrupted { return .verifyStore }
        switch keyProblem {
        case .missing?: return .giveStoreKey
        case .unexpected?: return .dropStoreKey
        case .unusableFile(let file)?: return .makeStoreKey(file: file ?? "FILE")
        case nil: return nil
        }
    }

    /// A missing or wrong key is `key`; anything else `storage`.
    package var repositoryError: RepositoryError {
        RepositoryError(code == .encryption ? .key : .storage, "\(self)", next: nextStep, cause: self)
    }
}

extension FetchError {
    /// The next step for a fetch of `source` (when known) that failed so.
    package func nextStep(source: String? = nil) -> NextStep? {
        switch subject {
        case .field(let key)?:
            guard let field = SourceSpec.Field(rawValue: key) else { return nil }
            // A field the source lacks is given; one the answer does not fit is checked.
            if let source, field == .detailURL { return .changeSource(source: source, field: field) }
            return .checkField(field)
        case .keptSecret(let header)?: return source.map { .giveSecretAgain(source: $0, header: header) }
        case .notFetchedYet?: return source.map(NextStep.fetch)
        case .credentials?: return source.map(NextStep.showSource)
        case nil: break
        }
        if code == .timeout { return .allowMoreTime }
        if code == .tooLarge { return .allowLargerBody }
        return nil
    }
}

extension RedactionKeyError {
    /// The refusal as the Domain's `key` problem, `context` (a team log's name) before it.
    package func repositoryError(_ context: String? = nil) -> RepositoryError {
        let next: NextStep? =
            switch kind {
            case .mismatch, .pushRefused: .installRedactionKey
            case .otherKeyRecorded: .rotateRedactionKey
            case .sameKey: nil
            }
        return RepositoryError(.key, (context.map { "\($0): " } ?? "") + message, next: next, cause: self)
    }
}

extension SourceCatalogError {
    package var repositoryError: RepositoryError {
        switch self {
        case .exists: RepositoryError(.invalidQuery, description, next: .replaceSource, cause: self)
        case .unknown: RepositoryError(.notFound, description, next: .listSources, cause: self)
        }
    }
}

extension TeamLogError {
    /// A refusal by another node is `conflict`; anything else `storage`.
    package func repositoryError(_ context: String? = nil) -> RepositoryError {
        let next: NextStep? = code == .fenced ? .takeOverLease : code == .corrupted ? .verifyStore : nil
        return RepositoryError(code == .fenced ? .conflict : .storage, (context.map { "\($0): " } ?? "") + message, next: next, cause: self)
    }
}

/// Runs a storage read, wrapping its failures as ``RepositoryError`` `storage` (a redaction key
/// that does not fit the history as `key`), with the next step the failure's type says.
package func storage<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let e as RepositoryError { throw e } catch let e as RedactionKeyError {
        throw e.repositoryError()
    } catch let e as SourceCatalogError {
        throw e.repositoryError
    } catch let e as IngestGate.Refusal {
        throw RepositoryError(.invalidQuery, e.description, cause: e)
    } catch let e as EventStoreError {
        throw RepositoryError(.storage, "could not read the store: \(e)", next: e.nextStep, cause: e)
    } catch {
        throw RepositoryError(.storage, "could not read the store: \(error)", cause: error)
    }
}
