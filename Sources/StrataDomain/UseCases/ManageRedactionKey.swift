/// The key placeholders are made with: one per team, so equal values give equal placeholders on
/// every node of a shared history. Handed around as a file, like the encryption key; the log
/// records only its check.
package struct ManageRedactionKey: Sendable {
    let keys: any RedactionKeyRepository

    package init(keys: any RedactionKeyRepository) { self.keys = keys }

    package func status() async throws -> RedactionKeyStatus { try await keys.status() }

    /// Makes the key in `file` this store's. - Throws: ``RepositoryError`` `key` when the history
    /// is redacted with another key, or the file is not a key.
    package func install(fromFile file: String) async throws -> (record: RedactionKeyRecord, recorded: Bool) {
        try await keys.install(fromFile: file)
    }

    /// Writes this store's key to a new file (mode 0600). Returns its check.
    package func export(toFile file: String) async throws -> String { try await keys.export(toFile: file) }

    /// Changes the key for the whole history from here on: the key in `file`, or a new one.
    package func rotate(toFile file: String?) async throws -> RedactionKeyRecord { try await keys.rotate(toFile: file) }
}
