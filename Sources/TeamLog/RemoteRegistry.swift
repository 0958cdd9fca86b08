import EventStore
import Foundation

/// `STORE/remotes.json` (mode 0600): this store's node id and its remotes (team logs), with how
/// far each was pulled, how far the store's seqs are the log's, and the fencing token this node
/// holds per leased source. URLs are kept as given (a password only as a `$VAR` template), never
/// resolved. Read by `strata remote` and, before a fetch, by the lease step.
public struct RemoteRegistry: Codable, Sendable {
    public struct Remote: Codable, Sendable {
        public var url: String
        public var pulled: UInt64 = 0
        /// The store's seqs hold the log's events up to here (absent in files from before
        /// replicas: checked from 0 at the next pull).
        public var inOrder: UInt64?
        /// The fencing token this node holds per leased source (absent in files from before leases).
        public var leases: [String: UInt64]?

        public init(url: String) { self.url = url }
    }
    public var node: String
    public var remotes: [String: Remote] = [:]

    public init(node: String) { self.node = node }

    public static func path(_ store: String) -> String { store + "/remotes.json" }

    /// The store's registry; a new one (a fresh node id, no remotes) when it has none.
    /// - Throws: ``TeamLogError`` `.corrupted` when the file does not decode.
    public static func load(store: String) throws -> RemoteRegistry {
        let path = path(store)
        guard let data = FileManager.default.contents(atPath: path) else { return RemoteRegistry(node: RandomID.uuid()) }
        do { return try JSONDecoder().decode(RemoteRegistry.self, from: data) } catch {
            throw TeamLogError(.corrupted, "\(path) is damaged (\(error)); fix or remove it (its remotes are then added again)")
        }
    }

    /// Writes the registry in one step (a temporary file renamed over it), mode 0600.
    public func save(store: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(self)
        let path = Self.path(store), temp = path + ".tmp"
        guard FileManager.default.createFile(atPath: temp, contents: data, attributes: [.posixPermissions: 0o600]),
            rename(temp, path) == 0
        else { throw TeamLogError(.corrupted, "could not write \(path)") }
    }
}
