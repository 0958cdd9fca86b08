package import EventStore
import Foundation
import StrataData
package import StrataDomain

/// ``RedactionKeyRepository`` over the store's `meta/redaction-key` and the log's
/// `RedactionKeyRecorded` events (``RedactionKeyLedger``); key files are read and written as
/// the encryption key's are (32 bytes, mode 0600).
package struct LMDBRedactionKeyRepository: RedactionKeyRepository {
    let store: EventStore

    package init(store: EventStore) {
        self.store = store
    }

    private var ledger: RedactionKeyLedger { RedactionKeyLedger(store: store) }

    package func status() async throws -> RedactionKeyStatus {
        try await mapped {
            RedactionKeyStatus(check: RedactionKeyLedger.check(try await ledger.key()), recorded: try await ledger.latest().map(RedactionKeyRecord.init))
        }
    }

    package func install(fromFile file: String) async throws -> (record: RedactionKeyRecord, recorded: Bool) {
        try await mapped {
            let installed = try await ledger.install(try Self.read(file))
            return (RedactionKeyRecord(installed.record), installed.recorded)
        }
    }

    package func export(toFile file: String) async throws -> String {
        try await mapped {
            let key = try await ledger.key()
            try StoreKey(bytes: key).write(toNewFile: file)
            return RedactionKeyLedger.check(key)
        }
    }

    package func rotate(toFile file: String?) async throws -> RedactionKeyRecord {
        try await mapped { RedactionKeyRecord(try await ledger.rotate(to: try file.map(Self.read))) }
    }

    /// A key file's 32 bytes, checked as an encryption key file is (its size, its mode).
    private static func read(_ file: String) throws -> [UInt8] {
        _ = try StoreKey.load(file: file)
        return [UInt8](FileManager.default.contents(atPath: file) ?? Data())
    }

    private func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as RedactionKeyError {
            var r = e.repositoryError()
            if e.kind == .sameKey { r.code = .invalidQuery }
            throw r
        } catch let e as EventStoreError where e.code == .encryption {
            throw RepositoryError(.key, e.message, next: e.nextStep, cause: e)
        } catch let e as RepositoryError {
            throw e
        } catch {
            throw RepositoryError(.storage, "\(error)", cause: error)
        }
    }
}

extension RedactionKeyRecord {
    init(_ r: RedactionKeyLedger.Record) { self.init(seq: r.seq, check: r.check, reason: r.reason) }
}
