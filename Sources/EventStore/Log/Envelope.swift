/// The binary encoding of an event envelope (format 1).
///
/// ```
/// u8 format=1 | u64be seq | str id | str type | varint schemaVersion | i64be recordedAt(µs)
/// | str stream | varint n, n × (str key, str value) | u8 hasPayload [32B sha256, varint size]
/// | 32B previousHash | 32B hash
/// ```
/// `str` is a varint length and UTF-8 bytes. `hash` = SHA-256 of every byte before it.
enum Envelope {
    static let format: UInt8 = 1
    static let zeroHash = [UInt8](repeating: 0, count: 32)

    /// Encodes `event`, computing and filling in its hash.
    static func encode(_ event: inout RecordedEvent) -> [UInt8] {
        var w = ByteWriter(capacity: 160 + event.metadata.count * 32)
        w.u8(format)
        w.u64(event.seq)
        w.string(event.id)
        w.string(event.type)
        w.varint(event.schemaVersion)
        w.i64(event.recordedAt.microseconds)
        w.string(event.stream)
        w.varint(event.metadata.count)
        for m in event.metadata {
            w.string(m.key)
            w.string(m.value)
        }
        if let p = event.payload {
            w.u8(1)
            w.raw(p.hash)
            w.varint(p.size)
        } else {
            w.u8(0)
        }
        w.raw(event.previousHash)
        let digest = Hashing.sha256(w.bytes)
        event.hash = digest
        w.raw(digest)
        return w.bytes
    }

    struct Malformed: Error {}

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> RecordedEvent {
        var r = ByteReader(bytes)
        do {
            guard try r.u8() == format else { throw Malformed() }
            let seq = try r.u64()
            let id = try r.string()
            let type = try r.string()
            // A damaged varint past Int's range is a malformed envelope, not a trap.
            guard let schema = Int(exactly: try r.varint()) else { throw Malformed() }
            let at = Timestamp(microseconds: try r.i64())
            let stream = try r.string()
            let n = try r.count(limit: 10_000)
            var meta: [RecordedEvent.Metadatum] = []
            meta.reserveCapacity(n)
            for _ in 0..<n {
                let k = try r.string()
                meta.append(.init(key: k, value: try r.string()))
            }
            var payload: PayloadReference?
            switch try r.u8() {
            case 0: break
            case 1:
                let h = try r.bytes(32)
                guard let size = Int(exactly: try r.varint()) else { throw Malformed() }
                payload = PayloadReference(hash: h, size: size)
            default: throw Malformed()
            }
            let prev = try r.bytes(32)
            let hash = try r.bytes(32)
            guard r.isAtEnd else { throw Malformed() }
            return RecordedEvent(
                seq: seq, id: id, type: type, schemaVersion: schema, recordedAt: at,
                stream: stream, metadata: meta, payload: payload,
                previousHash: prev, hash: hash)
        } catch {
            throw Malformed()
        }
    }

    /// The type's UTF-8 bytes inside stored envelope bytes, read without decoding the rest; nil
    /// when the bytes are not an envelope of this format.
    static func type(in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var r = ByteReader(bytes)
        guard (try? r.u8()) == format, (try? r.u64()) != nil,
            let idLength = try? r.count(), (try? r.slice(idLength)) != nil,
            let typeLength = try? r.count()
        else { return nil }
        return try? r.slice(typeLength)
    }

    /// The payload's SHA-256 inside stored envelope bytes, read without decoding the rest; nil for
    /// an event without a payload or bytes that are not an envelope of this format.
    static func payloadHash(in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var r = ByteReader(bytes)
        do {
            guard try r.u8() == format else { return nil }
            _ = try r.u64()
            _ = try r.slice(try r.count())  // id
            _ = try r.slice(try r.count())  // type
            _ = try r.varint()
            _ = try r.i64()
            _ = try r.slice(try r.count())  // stream
            for _ in 0..<(try r.count(limit: 10_000)) {
                _ = try r.slice(try r.count())
                _ = try r.slice(try r.count())
            }
            guard try r.u8() == 1 else { return nil }
            return try r.slice(32)
        } catch {
            return nil
        }
    }

    /// Whether the stored bytes hash to the hash they carry.
    static func selfConsistent(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count > 32 else { return false }
        let body = UnsafeRawBufferPointer(rebasing: bytes[0..<bytes.count - 32])
        let digest = Hashing.sha256(body)
        return digest.elementsEqual(bytes[(bytes.count - 32)...])
    }
}
