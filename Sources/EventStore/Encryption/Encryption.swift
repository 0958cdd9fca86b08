import Crypto
import Foundation
import LMDB
import Synchronization

/// The 32-byte key of an encrypted store. It lives in a file of its own (mode 0600, 32 random
/// bytes: `strata key generate`), never in the store, the log or any output.
public struct StoreKey: Sendable {
    private let bytes: [UInt8]
    var key: SymmetricKey { SymmetricKey(data: bytes) }

    /// - Throws: ``EventStoreError`` (`.encryption`) unless `bytes` is 32 bytes.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == 32 else {
            throw EventStoreError(code: .encryption, message: "a store key is 32 bytes, this one is \(bytes.count)", keyProblem: .unusableFile(nil))
        }
        self.bytes = bytes
    }

    /// A new key from the system's generator.
    public static func generate() -> StoreKey {
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeMutableBytes { RandomID.fill($0) }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        return try! StoreKey(bytes: bytes)
    }

    /// Reads a key file: exactly 32 bytes, readable by its owner only.
    /// - Throws: ``EventStoreError`` (`.encryption`) naming the file and what to do.
    public static func load(file path: String) throws -> StoreKey {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw EventStoreError(
                code: .encryption, message: "cannot read the key file \(path): \(String(cString: strerror(errno)))", keyProblem: .unusableFile(path))
        }
        guard st.st_mode & 0o077 == 0 else {
            throw EventStoreError(
                code: .encryption, message: "the key file \(path) can be read by others (mode \(String(st.st_mode & 0o777, radix: 8))); run `chmod 600 \(path)`"
            )
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EventStoreError(code: .encryption, message: "cannot read the key file \(path)")
        }
        return try StoreKey(bytes: [UInt8](data))
    }

    /// Writes the key to a new file, mode 0600; never replaces an existing file.
    /// - Throws: ``EventStoreError`` (`.encryption`) when the file exists or cannot be written.
    public func write(toNewFile path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "it exists (a key is never overwritten)" : String(cString: strerror(errno))
            throw EventStoreError(code: .encryption, message: "cannot create the key file \(path): \(reason)")
        }
        defer { close(fd) }
        let ok = bytes.withUnsafeBytes { b in Foundation.write(fd, b.baseAddress, b.count) == b.count }
        guard ok, fsync(fd) == 0 else { throw EventStoreError(code: .encryption, message: "cannot write the key file \(path)") }
    }
}

/// The cryptography of an encrypted store, from its key and the store's own salt (so one key
/// file used for two stores gives them unrelated keys):
/// - values: AES-256-GCM, a random 96-bit nonce per record, bound to the database and the key
///   the value is stored under (a value moved elsewhere does not open);
/// - keyed digests (HMAC-SHA256) of the keys of `ids`, `body-index`, `blobs` and `lineage`, and
///   of the item ids, index values and URLs inside projection keys (``TableSet/text(_:)``).
/// Subkeys are derived with HKDF-SHA256; the key itself is used for nothing else.
// Unchecked: immutable keys and contexts after init, and a nonce buffer under its own lock.
final class StoreCipher: ValueSealer, @unchecked Sendable {
    static let nonceBytes = 12
    static let tagBytes = 16
    let overhead = StoreCipher.nonceBytes + StoreCipher.tagBytes

    /// Keyed once each (``AESGCMKey``, ``HMACSHA256Key``): a seal or a digest allocates nothing.
    private let valueKey: AESGCMKey
    private let digestMAC: HMACSHA256Key
    private let textMAC: HMACSHA256Key
    /// What `meta/encryption` holds to recognize the key: HMAC of a fixed text.
    let check: [UInt8]
    /// The store's salt (`meta/encryption`).
    let salt: [UInt8]
    /// The version of `meta/encryption` the store was made with (what its `ids` keys hold).
    let version: UInt8
    private let nonces = Mutex(NoncePool())

    /// 16 bytes of the store's salt.
    init(key: StoreKey, salt: [UInt8], version: UInt8 = EncryptionRecord.currentVersion) {
        func derive(_ info: String) -> [UInt8] {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: key.key, salt: salt, info: Array(info.utf8), outputByteCount: 32)
                .withUnsafeBytes { Array($0) }
        }
        self.salt = salt
        self.version = version
        valueKey = AESGCMKey(key: derive("strata values v1"))
        digestMAC = HMACSHA256Key(key: derive("strata key digests v1"))
        textMAC = HMACSHA256Key(key: derive("strata key texts v1"))
        check = Array(HMAC<SHA256>.authenticationCode(for: Array("strata key check".utf8), using: SymmetricKey(data: derive("strata key check v1"))))
    }

    private struct NoncePool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private func nonce(into out: UnsafeMutableRawBufferPointer) {
        nonces.withLock { p in
            if p.used + out.count > p.bytes.count {
                p.bytes.withUnsafeMutableBytes { RandomID.fill($0) }
                p.used = 0
            }
            p.bytes.withUnsafeBytes { b in out.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[p.used..<(p.used + out.count)])) }
            p.used += out.count
        }
    }

    /// The associated data of a sealed value: the database's domain and the row's key.
    private static func withAAD<R>(_ domain: UInt64, _ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: 8 + key.count, alignment: 8) { a in
            a.storeBytes(of: domain.littleEndian, as: UInt64.self)
            if key.count > 0 { UnsafeMutableRawBufferPointer(rebasing: a[8...]).copyMemory(from: key) }
            return body(UnsafeRawBufferPointer(a))
        }
    }

    func seal(_ plain: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        let n = Self.nonceBytes
        nonce(into: UnsafeMutableRawBufferPointer(rebasing: out[0..<n]))
        Self.withAAD(domain, key) { aad in
            valueKey.seal(
                plain, nonce: UnsafeRawBufferPointer(rebasing: out[0..<n]), aad: aad,
                into: UnsafeMutableRawBufferPointer(rebasing: out[n...]))
        }
    }

    /// ``seal(_:domain:key:into:)`` into a new array (values sealed outside a transaction's
    /// put: a compaction's rewritten rows, the envelope dictionary).
    func sealed(_ plain: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plain.count + overhead)
        out.withUnsafeMutableBytes { seal(plain, domain: domain, key: key, into: $0) }
        return out
    }

    /// ``open(_:domain:key:into:)`` into a new array.
    func opened(_ sealed: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, sealed.count - overhead))
        try out.withUnsafeMutableBytes { try open(sealed, domain: domain, key: key, into: $0) }
        return out
    }

    func open(_ sealed: UnsafeRawBufferPointer, domain: UInt64, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        let n = Self.nonceBytes
        let opened =
            sealed.count >= n + Self.tagBytes
            && Self.withAAD(domain, key) { aad in
                valueKey.open(
                    UnsafeRawBufferPointer(rebasing: sealed[n...]), nonce: UnsafeRawBufferPointer(rebasing: sealed[0..<n]),
                    aad: aad, into: out)
            }
        guard opened else {
            throw StorageError(code: .corrupted, message: "a sealed value does not open under the store's key (changed, moved or damaged)")
        }
    }

    func digest(_ key: UnsafeRawBufferPointer, domain: UInt64, into out: UnsafeMutableRawBufferPointer) {
        withUnsafeBytes(of: domain.littleEndian) { digestMAC.authenticate($0, key, into: out) }
    }

    /// The 16 bytes that stand for a text (an item id, an index value, a URL) inside a projection
    /// key: a keyed digest with no zero byte, so keys keep their `0x00`-separated layout. The
    /// last 65,536 texts are remembered (ids recur: every version of an item makes its keys).
    func text(_ text: String) -> [UInt8] {
        if let known = texts.withLock({ $0[text] }) { return known }
        var out = [UInt8](repeating: 0, count: 16)
        var t = text
        t.withUTF8 { utf8 in out.withUnsafeMutableBytes { textMAC.authenticate(UnsafeRawBufferPointer(utf8), into: $0) } }
        for i in out.indices where out[i] == 0 { out[i] = 1 }
        texts.withLock { cache in
            if cache.count >= 65_536 { cache.removeAll(keepingCapacity: true) }
            cache[text] = out
        }
        return out
    }

    private let texts = Mutex<[String: [UInt8]]>([:])
}

/// What `meta/encryption` holds in an encrypted store: `u8 version | 16-byte salt | 32-byte key
/// check`. Version 1 digests `ids` keys whole; version 2 (stores made since) keeps the time of a
/// v7 UUID id in front of its digest (``EventIDOrder``).
struct EncryptionRecord {
    static let key = Array("encryption".utf8)
    static let currentVersion: UInt8 = 2
    var version: UInt8
    var salt: [UInt8]
    var check: [UInt8]

    init(version: UInt8 = Self.currentVersion, salt: [UInt8], check: [UInt8]) {
        self.version = version
        self.salt = salt
        self.check = check
    }

    init(_ raw: UnsafeRawBufferPointer) throws {
        guard raw.count == 49, (1...Self.currentVersion).contains(raw[0]) else {
            throw EventStoreError.corrupted("the store's encryption record is damaged or from a newer strata")
        }
        version = raw[0]
        salt = Array(raw[1..<17])
        check = Array(raw[17..<49])
    }

    var encoded: [UInt8] { [version] + salt + check }
}

/// The order kept in front of a digested event id (record version 2): the 48-bit millisecond
/// time of a v7 UUID (`tttttttt-tttt-7xxx-…`, the ids strata makes), big-endian, or six zero
/// bytes for any other id (ids callers derive from their facts). The time is readable anyway
/// (every event's time is); the rest of the id is not kept.
enum EventIDOrder {
    static let length = 6

    static func write(_ id: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        var ms: UInt64 = 0
        if id.count == 36, id[8] == 0x2D, id[13] == 0x2D, id[18] == 0x2D, id[23] == 0x2D, id[14] == 0x37 {
            for i in [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12] {
                guard let v = hexValue(id[i]) else { ms = 0; break }
                ms = ms << 4 | UInt64(v)
            }
        }
        for i in 0..<length { out[i] = UInt8(truncatingIfNeeded: ms >> (40 - 8 * UInt64(i))) }
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
}
