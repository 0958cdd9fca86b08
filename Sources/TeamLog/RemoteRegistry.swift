import EventStore
import Foundation

/// `STORE/remotes.json` (mode 0600): this store's node id and its remotes (team logs), with how
/// far each was pulled, how far the store's seqs are the log's, and the fencing token this node
/// holds per leased source. URLs are kept as given (a password only as a `$VAR` template), never
/// resolved. Read by `strata remote` and, before a fetch, by the lease step.
package struct RemoteRegistry: Codable, Sendable {
    package struct Remote: Codable, Sendable {
        package var url: String
        package var pulled: UInt64 = 0
        /// The store's seqs hold the log's events up to here (absent in files from before
        /// replicas: checked from 0 at the next pull).
        package var inOrder: UInt64?
        /// The fencing token this node holds per leased source (absent in files from before leases).
        package var leases: [String: UInt64]?

        package init(url: String) { self.url = url }
    }
    package var node: String
    package var remotes: [String: Remote] = [:]

    package init(node: String) { self.node = node }

    package static func path(_ store: String) -> String { store + "/remotes.json" }

    /// The store's registry; a new one (a fresh node id, no remotes) when it has none.
    /// - Throws: ``TeamLogError`` `.corrupted` when the file does not decode.
    package static func load(store: String) throws -> RemoteRegistry {
        let path = path(store)
        guard let data = FileManager.default.contents(atPath: path) else { return RemoteRegistry(node: RandomID.uuid()) }
        do { return try JSONDecoder().decode(RemoteRegistry.self, from: data) } catch {
            throw TeamLogError(.corrupted, "\(path) is damaged (\(error)); fix or remove it (its remotes are then added again)")
        }
    }

    /// Writes the registry in one step (a temporary file renamed over it), mode 0600.
    package func save(store: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        let path = Self.path(store), temp = path + ".tmp"
        guard FileManager.default.createFile(atPath: temp, contents: data, attributes: [.posixPermissions: 0o600]),
            rename(temp, path) == 0
        else { throw TeamLogError(.corrupted, "could not write \(path)") }
    }
}
