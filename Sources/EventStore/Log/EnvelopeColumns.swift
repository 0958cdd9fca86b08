import Foundation

/// The envelopes of a block laid out by column (format 11, ``EnvelopeBlock/columnsMark``).
///
/// Row by row, a block's envelopes interleave what does not compress (an id, a body's hash) with
/// what repeats (a type, a stream, metadata keys, a run id, a commit named by two events in a
/// row), and zstd pays for each switch between them. By column, each kind of field sits with its
/// own kind: the ids together, the hashes together, the times as small steps, and a metadata value
/// that repeats the same key's value before it in the block as one byte. On the four scraping
/// histories an envelope took 69 bytes in a row-wise block and 55 this way (docs/benchmarks.md).
///
/// The columns, one after the other, each holding every envelope of the block in order (the
/// envelopes as they are hashed: without their previous hash and hash; seqs are not stored, the
/// block's key and count give them):
///
/// ```
/// ids:        count × (varint 0 | 16 bytes: a lowercase 8-4-4-4-12 UUID's), or (varint k+1 | k bytes)
/// types:      count × (varint 0: the type of the envelope before), or (varint k+1 | k bytes)
/// versions:   count × varint schemaVersion
/// times:      count × varint zigzag(recordedAt − the envelope before's; the first's against 0)
/// streams:    count × as types
/// keys:       count × (varint n | n × (varint k | k bytes))
/// values:     for each key in the keys column: varint 0 (the value this key had last in the
///             block: in this envelope or one before it), or (varint k+1 | k bytes)
/// payloads:   count × u8 (0: none, 1: a payload)
/// hashes:     32 bytes for each envelope with a payload
/// sizes:      varint for each envelope with a payload
/// ```
///
/// A block is written so only when every envelope comes back byte for byte (``encode(_:first:)``
/// decodes what it wrote and compares): an envelope of another format or with a varint longer
/// than it needs is stored in a row-wise block instead.
enum EnvelopeColumns {
    /// The whole envelopes `envelopes` (of the seqs `first`, `first + 1`, …) by column, without
    /// their previous hashes and hashes; nil when one of them would not come back exactly.
    static func encode(_ envelopes: some Collection<[UInt8]>, first: UInt64) -> [UInt8]? {
        var ids = ByteWriter(capacity: envelopes.count * 17)
        var types = ByteWriter(capacity: envelopes.count * 2)
        var versions = ByteWriter(capacity: envelopes.count)
        var times = ByteWriter(capacity: envelopes.count * 3)
        var streams = ByteWriter(capacity: envelopes.count * 2)
        var keys = ByteWriter(capacity: envelopes.count * 64)
        var values = ByteWriter(capacity: envelopes.count * 64)
        var payloads = ByteWriter(capacity: envelopes.count)
        var hashes = ByteWriter(capacity: envelopes.count * 32)
        var sizes = ByteWriter(capacity: envelopes.count * 3)
        var lastValues = LastValues<[UInt8]>()
        var previousType: [UInt8]?
        var previousStream: [UInt8]?
        var previousTime: Int64 = 0
        var uuid = [UInt8](repeating: 0, count: IDKeys.compactLength)
        for (i, envelope) in envelopes.enumerated() {
            guard let e = try? envelope.withUnsafeBytes({ try Envelope.decode($0) }), e.seq == first &+ UInt64(i) else { return nil }
            let id = Array(e.id.utf8)
            if id.withUnsafeBytes({ utf8 in uuid.withUnsafeMutableBytes { IDKeys.compact(utf8, into: $0) } }) {
                ids.varint(0)
                ids.raw(uuid[1...])
            } else {
                ids.varint(id.count + 1)
                ids.raw(id)
            }
            Self.put(Array(e.type.utf8), &types, &previousType)
            versions.varint(e.schemaVersion)
            times.zigzag(e.recordedAt.microseconds &- previousTime)
            previousTime = e.recordedAt.microseconds
            Self.put(Array(e.stream.utf8), &streams, &previousStream)
            keys.varint(e.metadata.count)
            for m in e.metadata {
                let (key, value) = (Array(m.key.utf8), Array(m.value.utf8))
                keys.varint(key.count)
                keys.raw(key)
                if lastValues.swap(key, value) {
                    values.varint(0)
                } else {
                    values.varint(value.count + 1)
                    values.raw(value)
                }
            }
            if let payload = e.payload {
                payloads.u8(1)
                hashes.raw(payload.hash)
                sizes.varint(payload.size)
            } else {
                payloads.u8(0)
            }
        }
        var out = ids
        for column in [types, versions, times, streams, keys, values, payloads, hashes, sizes] { out.raw(column.bytes) }
        // Only what comes back byte for byte (a string that was not UTF-8, a varint longer than
        // it needs would not): the hash chain is over the envelopes as they were.
        guard let back = try? out.bytes.withUnsafeBytes({ try decode($0, count: envelopes.count, first: first) }),
            back.ranges.count == envelopes.count,
            zip(back.ranges, envelopes).allSatisfy({ back.bytes[$0].elementsEqual($1.dropLast(64)) })
        else { return nil }
        return out.bytes
    }

    /// A type or a stream: 0 when it is the envelope before's, else its length + 1 and its bytes.
    private static func put(_ value: [UInt8], _ column: inout ByteWriter, _ previous: inout [UInt8]?) {
        if value == previous {
            column.varint(0)
        } else {
            column.varint(value.count + 1)
            column.raw(value)
            previous = value
        }
    }

    /// The rows `encode` laid out by column: every envelope's bytes (without its previous hash
    /// and hash, its seq from `first` on) one after the other, and where each is. Throws on
    /// columns that do not parse or do not end where the last one does.
    static func decode(_ columns: UnsafeRawBufferPointer, count: Int, first: UInt64) throws -> (bytes: [UInt8], ranges: [Range<Int>]) {
        var r = ByteReader(columns)
        let ids = try (0..<count).map { _ -> Field in
            let k = try r.varint()
            guard k == 0 else { return .bytes(try r.slice(Int(try length(k - 1, &r)))) }
            return .uuid(try r.slice(16))
        }
        let types = try repeated(count, &r)
        let versions = try (0..<count).map { _ in try r.varint() }
        var time: Int64 = 0
        let times = try (0..<count).map { _ -> Int64 in
            time = time &+ (try r.zigzag())
            return time
        }
        let streams = try repeated(count, &r)
        var keyCounts: [Int] = []
        keyCounts.reserveCapacity(count)
        var keys: [UnsafeRawBufferPointer] = []
        for _ in 0..<count {
            let n = try r.count(limit: 1 << 16)
            keyCounts.append(n)
            for _ in 0..<n { keys.append(try r.slice(try r.count(limit: 1 << 16))) }
        }
        var lastValues = LastValues<UnsafeRawBufferPointer>()
        let values = try keys.map { key -> UnsafeRawBufferPointer in
            let k = try r.varint()
            guard k > 0 else {
                guard let value = lastValues.value(of: key) else { throw ByteReader.Truncated() }
                return value
            }
            let value = try r.slice(Int(try length(k - 1, &r)))
            _ = lastValues.swap(key, value)
            return value
        }
        let payloads = try (0..<count).map { _ -> Bool in
            switch try r.u8() {
            case 0: return false
            case 1: return true
            default: throw ByteReader.Truncated()
            }
        }
        let withPayload = payloads.lazy.filter { $0 }.count
        let hashes = try r.slice(withPayload * 32)
        let sizes = try (0..<withPayload).map { _ in try r.varint() }
        guard r.isAtEnd else { throw ByteReader.Truncated() }

        var w = ByteWriter(capacity: columns.count * 4)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(count)
        var key = 0
        var payload = 0
        for i in 0..<count {
            let start = w.bytes.count
            w.u8(Envelope.format)
            w.u64(first &+ UInt64(i))
            switch ids[i] {
            case .bytes(let b):
                w.varint(b.count)
                w.raw(b)
            case .uuid(let b):
                w.varint(36)
                for (j, byte) in b.enumerated() {
                    if j == 4 || j == 6 || j == 8 || j == 10 { w.u8(0x2D) }
                    w.u8(hexDigits[Int(byte >> 4)])
                    w.u8(hexDigits[Int(byte & 0x0F)])
                }
            }
            w.varint(types[i].count)
            w.raw(types[i])
            w.varint(versions[i])
            w.i64(times[i])
            w.varint(streams[i].count)
            w.raw(streams[i])
            w.varint(keyCounts[i])
            for _ in 0..<keyCounts[i] {
                w.varint(keys[key].count)
                w.raw(keys[key])
                w.varint(values[key].count)
                w.raw(values[key])
                key += 1
            }
            if payloads[i] {
                w.u8(1)
                w.raw(UnsafeRawBufferPointer(rebasing: hashes[(payload * 32)..<(payload * 32 + 32)]))
                w.varint(sizes[payload])
                payload += 1
            } else {
                w.u8(0)
            }
            ranges.append(start..<w.bytes.count)
        }
        return (w.bytes, ranges)
    }

    private enum Field {
        case bytes(UnsafeRawBufferPointer)
        case uuid(UnsafeRawBufferPointer)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A length read from a column, checked against what is left of it.
    private static func length(_ n: UInt64, _ r: inout ByteReader) throws -> UInt64 {
        guard n <= UInt64(r.remaining) else { throw ByteReader.Truncated() }
        return n
    }

    /// A column of types or streams (``put(_:_:_:)``).
    private static func repeated(_ count: Int, _ r: inout ByteReader) throws -> [UnsafeRawBufferPointer] {
        var out: [UnsafeRawBufferPointer] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            let k = try r.varint()
            if k == 0 {
                guard let previous = out.last else { throw ByteReader.Truncated() }
                out.append(previous)
            } else {
                out.append(try r.slice(Int(try length(k - 1, &r))))
            }
        }
        return out
    }

    /// The value each metadata key had last in a block, for the few keys a log uses: a linear
    /// search is faster than hashing them. The encoder keeps copies; the decoder, slices of the
    /// columns it reads.
    private struct LastValues<Bytes: Collection<UInt8>> {
        private var entries: [(key: Bytes, value: Bytes)] = []

        func value(of key: some Collection<UInt8>) -> Bytes? {
            entries.first { $0.key.elementsEqual(key) }?.value
        }

        /// Records `value` as `key`'s; whether it was its value already.
        mutating func swap(_ key: Bytes, _ value: Bytes) -> Bool {
            guard let i = entries.firstIndex(where: { $0.key.elementsEqual(key) }) else {
                entries.append((key, value))
                return false
            }
            if entries[i].value.elementsEqual(value) { return true }
            entries[i].value = value
            return false
        }
    }
}
