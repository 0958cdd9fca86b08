import Crypto

/// SHA-256 over raw bytes, straight to a byte array: the store's hashes (bodies, envelopes,
/// seals, document digests) all go through here. `SHA256.hash(data:)` on an array goes through
/// `DataProtocol`'s generic region walk and a generic prefix copy, which cost more than hashing a
/// small document.
public enum Hashing {
    /// The first `count` bytes (at most 32) of the SHA-256 of `bytes`.
    static func sha256(_ bytes: UnsafeRawBufferPointer, prefix count: Int = 32) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        let digest = hasher.finalize()
        return digest.withUnsafeBytes { d in Array(UnsafeRawBufferPointer(rebasing: d[0..<min(count, d.count)])) }
    }

    /// The first `out.count` bytes (at most 32) of the SHA-256 of `bytes`, written to `out`.
    static func sha256(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        let digest = hasher.finalize()
        digest.withUnsafeBytes { d in out.copyMemory(from: UnsafeRawBufferPointer(rebasing: d[0..<min(out.count, d.count)])) }
    }

    public static func sha256(_ bytes: [UInt8], prefix count: Int = 32) -> [UInt8] {
        bytes.withUnsafeBytes { sha256($0, prefix: count) }
    }
}
