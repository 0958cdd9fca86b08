/// A body in the form another store or the team log keeps it: compressed on its own (zstd,
/// sealed; small bodies raw), never a delta, so it reads without anything else (``BlobCodec``
/// codecs 0 and 2).
public enum PortableBody {
    public static func encode(_ body: [UInt8]) -> [UInt8] {
        ZstdContext.pooled { BlobCodec.encode(body, context: $0) }
    }

    /// The body; throws when `stored` is damaged (its seal or its frame) or is not self-contained.
    public static func decode(_ stored: [UInt8]) throws -> [UInt8] {
        guard !stored.isEmpty, stored.withUnsafeBytes({ BlobCodec.isSelfContained($0) }) else {
            throw EventStoreError.corrupted("a transferred body is not self-contained")
        }
        do {
            return try stored.withUnsafeBytes { raw in try ZstdContext.pooled { try BlobCodec.decode(raw, context: $0, checkSeal: true) } }
        } catch {
            throw EventStoreError.corrupted("a transferred body does not decode (damaged)")
        }
    }
}
