/// What an encrypted store puts between its tables and LMDB: values sealed (authenticated
/// encryption bound to their database and key) and, for the databases whose keys are looked up
/// only whole, keys replaced by keyed digests. The LMDB wrapper stays free of cryptography; the
/// store gives it an implementation.
///
/// A ``Database`` opened with a sealer hands out plaintext values (decrypted into memory the
/// transaction owns) and takes plaintext values, so code above it reads and writes as it does in
/// a store without a key.
public protocol ValueSealer: AnyObject, Sendable {
    /// Bytes a sealed value has beyond its plaintext.
    var overhead: Int { get }
    /// Writes the sealed form of `plain` (exactly `plain.count + overhead` bytes) to `out`,
    /// bound to `domain` (the database) and `key` (its LMDB key).
    func seal(_ plain: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
    /// Writes the plaintext of `sealed` to `out` (`sealed.count - overhead` bytes); throws when
    /// the value was not sealed under this key, for this database and key, or was changed.
    func open(_ sealed: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws
    /// Writes a keyed digest of `key` to `out` (`out.count` bytes, 8–32) for `domain`.
    func digest(_ key: UnsafeRawBufferPointer, domain: UInt64, into out: UnsafeMutableRawBufferPointer)
}

/// How a database's rows are protected in an encrypted store.
public final class Protection: Sendable {
    public let sealer: any ValueSealer
    /// Values are sealed.
    public let sealsValues: Bool
    /// Keys are replaced by a keyed digest of this many bytes (nil: stored as given). Only for
    /// databases read by whole keys: a cursor over one sees the digests.
    public let keyDigestLength: Int?
    /// Bytes kept in front of a key's digest, so digested keys keep an order that shows nothing
    /// the store does not show anyway (the time in a v7 UUID event id): new keys then land at
    /// the right edge of the tree, not on a random page each. `keyOrder` writes them from the
    /// plain key.
    public let keyOrderLength: Int
    public let keyOrder: (@Sendable (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> Void)?

    public init(
        sealer: any ValueSealer, sealsValues: Bool = true, keyDigestLength: Int? = nil,
        keyOrderLength: Int = 0, keyOrder: (@Sendable (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> Void)? = nil
    ) {
        precondition(keyDigestLength.map { (8...32).contains($0) } ?? true, "a key digest is 8–32 bytes")
        precondition(
            (keyOrderLength == 0) == (keyOrder == nil) && (keyOrderLength == 0 || keyDigestLength != nil),
            "an order prefix goes with a key digest")
        self.sealer = sealer
        self.sealsValues = sealsValues
        self.keyDigestLength = keyDigestLength
        self.keyOrderLength = keyOrderLength
        self.keyOrder = keyOrder
    }

    /// Writes the key LMDB holds for `key` (`keyOrderLength + keyDigestLength` bytes) to `out`.
    func storedKey(_ key: UnsafeRawBufferPointer, domain: UInt64, into out: UnsafeMutableRawBufferPointer) {
        if let keyOrder { keyOrder(key, UnsafeMutableRawBufferPointer(rebasing: out[0..<keyOrderLength])) }
        sealer.digest(key, domain: domain, into: UnsafeMutableRawBufferPointer(rebasing: out[keyOrderLength...]))
    }
}

/// Memory a transaction owns for the plaintext of sealed values it hands out: bump-allocated in
/// blocks, freed when the transaction ends, so a value stays valid as long as one read straight
/// from the map would.
final class Arena {
    private var blocks: [UnsafeMutableRawBufferPointer] = []
    private var current: UnsafeMutableRawBufferPointer?
    private var used = 0
    private static let blockSize = 256 << 10

    func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if count > Self.blockSize / 4 {
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
            blocks.append(b)
            return UnsafeMutableRawBufferPointer(rebasing: b[0..<count])
        }
        if current == nil || used + count > current!.count {
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.blockSize, alignment: 16)
            blocks.append(b)
            current = b
            used = 0
        }
        let out = UnsafeMutableRawBufferPointer(rebasing: current![used..<(used + count)])
        used += (count + 7) & ~7
        return out
    }

    func release() {
        for b in blocks { b.deallocate() }
        blocks.removeAll()
        current = nil
        used = 0
    }

    deinit { release() }
}
