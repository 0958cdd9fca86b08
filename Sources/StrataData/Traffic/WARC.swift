import Crypto
import Foundation

/// One WARC record: its version line, named fields and content block.
public struct WARCRecord: Sendable {
    public var version: String
    public var fields: [HeaderLine]
    public var block: [UInt8]

    public init(version: String = "WARC/1.1", fields: [HeaderLine], block: [UInt8]) {
        self.version = version
        self.fields = fields
        self.block = block
    }

    public subscript(_ name: String) -> String? { HeaderLine.value(name, in: fields) }
    /// `WARC-Type`, lower-cased.
    public var type: String { (self["WARC-Type"] ?? "").lowercased() }
}

/// Reads a WARC file (1.0 or 1.1; plain, gzipped per record or gzipped whole) one record at a
/// time, holding one record's block in memory at most.
public final class WARCReader {
    private let file: FileHandle
    private let path: String
    private var inflater: GzipInflater?
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    /// Bytes of the file read so far (progress), and records read.
    public private(set) var fileBytesRead: Int64 = 0
    public private(set) var records = 0
    /// The largest content block accepted.
    public static let maxBlock = 1 << 30

    public init(path: String) throws(FetchError) {
        guard let f = FileHandle(forReadingAtPath: path) else {
            throw FetchError(code: .other, message: "cannot read the WARC file \(path); check the path", url: path)
        }
        file = f
        self.path = path
        let head = (try? f.read(upToCount: 2)).map { [UInt8]($0) } ?? []
        try? f.seek(toOffset: 0)
        if head == [0x1f, 0x8b] { inflater = GzipInflater() }
    }

    deinit { try? file.close() }

    private func failure(_ why: String) -> FetchError {
        FetchError(code: .malformedJSON, message: "\(path) is not a valid WARC file: \(why) (record \(records + 1))", url: path)
    }

    /// Reads more of the file into the buffer; false at the end of the file.
    private func refill() throws(FetchError) -> Bool {
        if atEnd { return false }
        if position > 0 && position >= buffer.count / 2 {
            buffer.removeSubrange(0..<position)
            position = 0
        }
        let chunk: Data
        do { chunk = try file.read(upToCount: 1 << 20) ?? Data() } catch { throw failure("read error: \(error)") }
        guard !chunk.isEmpty else {
            atEnd = true
            if let inflater, !inflater.atMemberEnd { throw failure("the gzip stream is cut short") }
            return false
        }
        fileBytesRead += Int64(chunk.count)
        if let inflater {
            do { try chunk.withUnsafeBytes { try inflater.inflate($0, into: &buffer) } } catch { throw failure("gzip: \(error)") }
        } else {
            buffer.append(contentsOf: chunk)
        }
        return true
    }

    /// The next line without its line end; nil at the end of the file.
    private func line() throws(FetchError) -> [UInt8]? {
        var searched = position
        while true {
            if let nl = buffer[searched...].firstIndex(of: 0x0A) {
                var end = nl
                if end > position && buffer[end - 1] == 0x0D { end -= 1 }
                let l = Array(buffer[position..<end])
                position = nl + 1
                return l
            }
            searched = buffer.count
            guard buffer.count - position < 1 << 20 else { throw failure("a header line longer than 1 MiB") }
            let before = position
            guard try refill() else {
                guard position < buffer.count else { return nil }
                let l = Array(buffer[position...])
                position = buffer.count
                return l
            }
            searched -= before - position
        }
    }

    private func take(_ count: Int) throws(FetchError) -> [UInt8] {
        while buffer.count - position < count {
            guard try refill() else { throw failure("the content block is cut short (\(count) bytes promised)") }
        }
        let out = Array(buffer[position..<position + count])
        position += count
        return out
    }

    /// The next record; nil at the end of the file.
    public func next() throws(FetchError) -> WARCRecord? {
        var first: [UInt8]?
        repeat {
            guard let l = try line() else { return nil }
            first = l.isEmpty ? nil : l
        } while first == nil
        let version = String(decoding: first!, as: UTF8.self)
        guard version.hasPrefix("WARC/") else { throw failure("expected a WARC/1.x version line, found '\(version.prefix(40))'") }
        var fields: [HeaderLine] = []
        while true {
            guard let l = try line() else { throw failure("the file ends inside a record's header: it was cut short") }
            if l.isEmpty { break }
            if l.first == 0x20 || l.first == 0x09, !fields.isEmpty {
                fields[fields.count - 1].value += " " + String(decoding: l, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let colon = l.firstIndex(of: 0x3A) else { throw failure("a field line without a colon") }
            fields.append(
                HeaderLine(
                    String(decoding: l[..<colon], as: UTF8.self),
                    String(decoding: l[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)))
        }
        guard let lengthText = HeaderLine.value("Content-Length", in: fields), let length = Int(lengthText), length >= 0 else {
            throw failure("no Content-Length")
        }
        guard length <= Self.maxBlock else { throw failure("a record of \(length) bytes (at most \(Self.maxBlock))") }
        let block = try take(length)
        records += 1
        return WARCRecord(version: version, fields: fields, block: block)
    }
}

/// Writes WARC 1.1 records, each its own gzip member (so readers can seek to any record).
public final class WARCWriter {
    private let file: FileHandle
    private let compress: Bool
    public private(set) var records = 0

    public init(path: String, compress: Bool = true) throws(FetchError) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let f = FileHandle(forWritingAtPath: path) else {
            throw FetchError(code: .other, message: "cannot write \(path); check the directory", url: path)
        }
        file = f
        self.compress = compress
    }

    deinit { try? file.close() }

    public func write(_ record: WARCRecord) throws(FetchError) {
        var bytes = Array("\(record.version)\r\n".utf8)
        for f in record.fields where f.name.caseInsensitiveCompare("Content-Length") != .orderedSame {
            bytes += Array("\(f.name): \(f.value)\r\n".utf8)
        }
        bytes += Array("Content-Length: \(record.block.count)\r\n\r\n".utf8)
        bytes += record.block
        bytes += Array("\r\n\r\n".utf8)
        do { try file.write(contentsOf: compress ? Gzip.member(bytes) : bytes) } catch {
            throw FetchError(code: .other, message: "could not write the WARC file: \(error)", url: "")
        }
        records += 1
    }

    public func close() throws(FetchError) {
        do { try file.close() } catch { throw FetchError(code: .other, message: "could not close the WARC file: \(error)", url: "") }
    }

    /// `sha1:` and the base32 of the SHA-1 of `bytes` (the digest form WARC tools write).
    public static func digest(_ bytes: [UInt8]) -> String { "sha1:" + base32(Array(Insecure.SHA1.hash(data: bytes))) }

    static func base32(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var out = ""
        var buffer = 0
        var bits = 0
        for b in bytes {
            buffer = (buffer << 8) | Int(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        while out.count % 8 != 0 { out.append("=") }
        return out
    }
}

/// An HTTP/1.x message as a WARC block holds it: the start line, the header lines, the body.
public struct HTTPMessage: Sendable, Hashable {
    public var startLine: String
    public var headers: [HeaderLine]
    public var body: [UInt8]

    public init(startLine: String, headers: [HeaderLine], body: [UInt8]) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    /// Parses `bytes`; a chunked body is de-chunked (and its `Transfer-Encoding` dropped). nil when
    /// there is no start line or header end.
    public static func parse(_ bytes: [UInt8]) -> HTTPMessage? {
        var i = 0
        func line() -> String? {
            guard i < bytes.count, let nl = bytes[i...].firstIndex(of: 0x0A) else { return nil }
            var end = nl
            if end > i && bytes[end - 1] == 0x0D { end -= 1 }
            let l = String(decoding: bytes[i..<end], as: UTF8.self)
            i = nl + 1
            return l
        }
        guard let start = line(), !start.isEmpty else { return nil }
        var headers: [HeaderLine] = []
        var ended = false
        while let l = line() {
            if l.isEmpty {
                ended = true
                break
            }
            if let c = l.first, c == " " || c == "\t", !headers.isEmpty {
                headers[headers.count - 1].value += " " + l.trimmingCharacters(in: .whitespaces)
            } else if let colon = l.firstIndex(of: ":") {
                headers.append(HeaderLine(String(l[..<colon]), String(l[l.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            }
        }
        // Headers that end the block with no blank line: a message without a body.
        var body = ended ? Array(bytes[i...]) : []
        if let te = HeaderLine.value("Transfer-Encoding", in: headers), te.lowercased().contains("chunked"), let plain = dechunk(body) {
            body = plain
            headers.removeAll { $0.name.caseInsensitiveCompare("Transfer-Encoding") == .orderedSame }
        }
        return HTTPMessage(startLine: start, headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard let nl = bytes[i...].firstIndex(of: 0x0A) else { return nil }
            let sizeText = String(decoding: bytes[i..<nl], as: UTF8.self).split(separator: ";").first.map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard let sizeText, let size = Int(sizeText, radix: 16) else { return nil }
            i = nl + 1
            if size == 0 { return out }
            guard i + size <= bytes.count else { return nil }
            out += bytes[i..<i + size]
            i += size
            if i < bytes.count && bytes[i] == 0x0D { i += 1 }
            if i < bytes.count && bytes[i] == 0x0A { i += 1 }
        }
        return out
    }

    /// The bytes of the message: start line, headers, blank line, body.
    public var bytes: [UInt8] {
        var out = Array((startLine + "\r\n").utf8)
        for h in headers { out += Array("\(h.name): \(h.value)\r\n".utf8) }
        out += [0x0D, 0x0A]
        return out + body
    }
}
