import CCryptoBoringSSL

/// SHA-256 over raw bytes, straight to a byte array: the store's hashes (bodies, envelopes,
/// seals, document digests, the sealed chain) all go through here, on swift-crypto's own
/// BoringSSL (the library behind `Crypto` on Linux) with its context on the stack.
/// `SHA256.hash(data:)` on an array goes through `DataProtocol`'s generic region walk and a
/// generic prefix copy, and `Crypto.SHA256` allocates a context object for every hash, which
/// cost more than hashing a small document.
public enum Hashing {
    /// A SHA-256 fed in parts.
    struct SHA256Parts {
        private var context = SHA256_CTX()

        init() { _ = CCryptoBoringSSL_SHA256_Init(&context) }

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            if bytes.count > 0 { _ = CCryptoBoringSSL_SHA256_Update(&context, bytes.baseAddress, bytes.count) }
        }

        /// `bytes` after its length as a `u64be`, so consecutive parts cannot be cut differently.
        mutating func updateLengthPrefixed(_ bytes: UnsafeRawBufferPointer) {
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { update($0) }
            update(bytes)
        }

        /// Writes the first `out.count` bytes (at most 32) of the digest to `out`.
        mutating func finish(into out: UnsafeMutableRawBufferPointer) {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest in
                _ = CCryptoBoringSSL_SHA256_Final(digest.baseAddress, &context)
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digest)[0..<min(out.count, 32)]))
            }
        }

        /// The first `count` bytes (at most 32) of the digest.
        mutating func finish(prefix count: Int = 32) -> [UInt8] {
            let n = min(max(count, 0), 32)
            return [UInt8](unsafeUninitializedCapacity: n) { buffer, initialized in
                finish(into: UnsafeMutableRawBufferPointer(buffer))
                initialized = n
            }
        }
    }

    /// The first `count` bytes (at most 32) of the SHA-256 of `bytes`.
    static func sha256(_ bytes: UnsafeRawBufferPointer, prefix count: Int = 32) -> [UInt8] {
        var hasher = SHA256Parts()
        hasher.update(bytes)
        return hasher.finish(prefix: count)
    }

    /// The first `out.count` bytes (at most 32) of the SHA-256 of `bytes`, written to `out`.
    static func sha256(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        var hasher = SHA256Parts()
        hasher.update(bytes)
        hasher.finish(into: out)
    }

    public static func sha256(_ bytes: [UInt8], prefix count: Int = 32) -> [UInt8] {
        bytes.withUnsafeBytes { sha256($0, prefix: count) }
    }

    /// The digest of a prepared document (a body of one of a projection's `documentTypes`): the
    /// first 16 bytes of the SHA-256 of its canonical form, as ``BodyArena`` writes it too.
    static func documentDigest(_ canonical: [UInt8]) -> [UInt8] { sha256(canonical, prefix: 16) }
}
