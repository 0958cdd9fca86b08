// The two primitives an encrypted store calls for every value and key it stores, on
// swift-crypto's own BoringSSL (its `CCryptoBoringSSL` module, the library behind `Crypto` on
// Linux) rather than through `Crypto`'s API: that API builds an AEAD context (key schedule
// included) and allocates `Data` for every seal, and copies HMAC state through classes per
// digest; at four seals and two digests per appended event that was most of the cost of
// encryption (docs/benchmarks.md, "Encryption at rest"). Both types here are keyed once and
// then write into the caller's buffers without allocating. The results are the standard
// constructions: AES-256-GCM with a 96-bit nonce and a 128-bit tag, and HMAC-SHA256.
import CCryptoBoringSSL

/// AES-256-GCM with one key schedule for the life of the store. `EVP_AEAD_CTX_seal`/`_open`
/// take the context as `const`, so concurrent transactions may share it.
// Unchecked: a raw `EVP_AEAD_CTX`; seal and open take it `const`, so sharing is safe.
final class AESGCMKey: @unchecked Sendable {
    private let context: UnsafeMutablePointer<EVP_AEAD_CTX>
    static let nonceBytes = 12
    static let tagBytes = 16

    /// - Parameter key: 32 bytes.
    init(key: [UInt8]) {
        precondition(key.count == 32)
        context = .allocate(capacity: 1)
        CCryptoBoringSSL_EVP_AEAD_CTX_zero(context)
        let rc = key.withUnsafeBufferPointer {
            CCryptoBoringSSL_EVP_AEAD_CTX_init(
                context, CCryptoBoringSSL_EVP_aead_aes_256_gcm(), $0.baseAddress, $0.count,
                Self.tagBytes, nil)
        }
        precondition(rc == 1, "BoringSSL refused a 32-byte AES-256-GCM key")
    }

    deinit {
        CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(context)
        context.deallocate()
    }

    /// Writes `ciphertext | tag` (`plain.count + 16` bytes) to `out`.
    func seal(
        _ plain: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(out.count == plain.count + Self.tagBytes && nonce.count == Self.nonceBytes)
        var written = 0
        let rc = CCryptoBoringSSL_EVP_AEAD_CTX_seal(
            context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, out.count,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self), nonce.count,
            plain.baseAddress?.assumingMemoryBound(to: UInt8.self), plain.count,
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self), aad.count)
        precondition(rc == 1 && written == out.count, "AES-256-GCM seal failed")
    }

    /// Opens `ciphertext | tag` into `out` (`sealed.count - 16` bytes); false when the tag does
    /// not match (another key, another place, or changed bytes).
    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard sealed.count >= Self.tagBytes, out.count == sealed.count - Self.tagBytes, nonce.count == Self.nonceBytes else {
            return false
        }
        var written = 0
        // BoringSSL wants a non-null output pointer even for an empty plaintext.
        var spare: UInt8 = 0
        return withUnsafeMutablePointer(to: &spare) { spare in
            let rc = CCryptoBoringSSL_EVP_AEAD_CTX_open(
                context, out.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? spare, &written, out.count,
                nonce.baseAddress!.assumingMemoryBound(to: UInt8.self), nonce.count,
                sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), sealed.count,
                aad.baseAddress?.assumingMemoryBound(to: UInt8.self), aad.count)
            return rc == 1 && written == out.count
        }
    }
}

/// HMAC-SHA256 keyed once: the SHA-256 states after the key's inner and outer pads are kept,
/// and each digest starts from copies of them (plain structs: nothing is allocated).
struct HMACSHA256Key: Sendable {
    private let inner: SHA256_CTX
    private let outer: SHA256_CTX

    /// - Parameter key: at most 64 bytes (the subkeys are 32).
    init(key: [UInt8]) {
        precondition(key.count <= 64)
        var ipad = [UInt8](repeating: 0x36, count: 64), opad = [UInt8](repeating: 0x5c, count: 64)
        for (i, b) in key.enumerated() { ipad[i] ^= b; opad[i] ^= b }
        var i = SHA256_CTX(), o = SHA256_CTX()
        CCryptoBoringSSL_SHA256_Init(&i); CCryptoBoringSSL_SHA256_Update(&i, ipad, 64)
        CCryptoBoringSSL_SHA256_Init(&o); CCryptoBoringSSL_SHA256_Update(&o, opad, 64)
        inner = i; outer = o
    }

    /// The 32-byte code of the concatenated parts, or its first `out.count` bytes.
    func authenticate(_ parts: UnsafeRawBufferPointer..., into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count <= 32)
        var ctx = inner
        for p in parts where p.count > 0 { CCryptoBoringSSL_SHA256_Update(&ctx, p.baseAddress, p.count) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { code in
            CCryptoBoringSSL_SHA256_Final(code.baseAddress, &ctx)
            var o = outer
            CCryptoBoringSSL_SHA256_Update(&o, code.baseAddress, 32)
            CCryptoBoringSSL_SHA256_Final(code.baseAddress, &o)
            out.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(code)[0..<out.count]))
        }
    }
}
