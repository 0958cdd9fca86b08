import CZlib

/// gzip with zlib: one member made at a time (a WARC's per-record compression), and a reader
/// that inflates member after member of a stream, as a concatenation of members is one valid
/// gzip file.
public enum Gzip {
    /// `bytes` as one gzip member.
    public static func member(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8] {
        var s = z_stream()
        // 15 + 16: a gzip header and trailer around the deflate stream.
        guard deflateInit2_(&s, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return []
        }
        defer { deflateEnd(&s) }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&s, UInt(bytes.count))) + 32)
        var input = bytes
        let produced = input.withUnsafeMutableBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                s.next_in = inp.baseAddress
                s.avail_in = UInt32(inp.count)
                s.next_out = o.baseAddress
                s.avail_out = UInt32(o.count)
                _ = deflate(&s, Z_FINISH)
                return o.count - Int(s.avail_out)
            }
        }
        out.removeSubrange(produced...)
        return out
    }
}

/// Inflates a gzip stream of one or more members, fed a chunk at a time.
public final class GzipInflater {
    private var s = z_stream()
    private var open = false
    private var scratch = [UInt8](repeating: 0, count: 256 << 10)
    /// Whether the last member ended cleanly (false while one is open).
    public private(set) var atMemberEnd = true

    public init() {}
    deinit { if open { inflateEnd(&s) } }

    public enum Failure: Error { case corrupt(String) }

    /// The bytes `chunk` inflates to, appended to `out`.
    public func inflate(_ chunk: UnsafeRawBufferPointer, into out: inout [UInt8]) throws {
        var offset = 0
        while offset < chunk.count {
            if !open {
                s = z_stream()
                guard inflateInit2_(&s, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw Failure.corrupt("zlib did not start") }
                open = true
                atMemberEnd = false
            }
            let base = chunk.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
            s.next_in = UnsafeMutablePointer(mutating: base)
            s.avail_in = UInt32(chunk.count - offset)
            var rc: Int32 = Z_OK
            repeat {
                let produced = scratch.withUnsafeMutableBufferPointer { o -> Int in
                    s.next_out = o.baseAddress
                    s.avail_out = UInt32(o.count)
                    rc = CZlib.inflate(&s, Z_NO_FLUSH)
                    return o.count - Int(s.avail_out)
                }
                if produced > 0 { out.append(contentsOf: scratch[0..<produced]) }
                if rc == Z_BUF_ERROR && s.avail_in == 0 { rc = Z_OK; break }
            } while rc == Z_OK && (s.avail_in > 0 || s.avail_out == 0)
            let consumed = (chunk.count - offset) - Int(s.avail_in)
            offset += consumed
            switch rc {
            case Z_STREAM_END:
                inflateEnd(&s)
                open = false
                atMemberEnd = true
            case Z_OK, Z_BUF_ERROR:
                if consumed == 0 && s.avail_in > 0 { throw Failure.corrupt("the gzip stream does not advance") }
            default:
                let message = s.msg.map { String(cString: $0) } ?? "error \(rc)"
                throw Failure.corrupt(message)
            }
        }
    }
}
