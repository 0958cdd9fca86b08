public import EventStore
import Foundation

/// What a HAR or WARC import did.
public struct TrafficImportSummary: Sendable, Hashable {
    /// Exchanges found in the file, appended now, and already in the log (a re-import).
    public var exchanges = 0
    public var appended = 0
    public var alreadyRecorded: Int { exchanges - appended }
    /// WARC records read, and those with no exchange in them (`warcinfo`, `metadata`,
    /// `resource`, a request whose response never came), by type.
    public var records = 0
    public var skipped: [String: Int] = [:]
    /// Revisit records whose original payload was not found: recorded without a body.
    public var unresolvedRevisits = 0
    public var bytes: Int64 = 0
    public init() {}
}

/// What a HAR or WARC export wrote.
public struct TrafficExportSummary: Sendable, Hashable {
    public var exchanges = 0
    /// Exchanges that got no answer: a HAR keeps them (status 0); a WARC has no form for them.
    public var failures = 0
    public var records = 0
    public var bytes: Int64 = 0
    public init() {}
}

extension TrafficLog {
    /// Imports the entries of a HAR 1.2 file as `source`'s exchanges, each observed at its
    /// `startedDateTime`. Ids come from the file's content and each entry's place in it, so a
    /// re-import appends nothing.
    public func importHAR(path: String, source: String, gate: IngestGate) async throws -> TrafficImportSummary {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FetchError(code: .other, message: "cannot read the HAR file \(path); check the path", url: path)
        }
        let har: HARDto
        do { har = try JSONDecoder().decode(HARDto.self, from: data) } catch {
            throw FetchError(code: .malformedJSON, message: "\(path) is not a HAR 1.2 file: \(Self.describe(error))", url: path)
        }
        var summary = TrafficImportSummary()
        summary.bytes = Int64(data.count)
        var batch: [ExchangeEntity] = []
        for (i, entry) in har.log.entries.enumerated() {
            var x = try HARMapping.exchange(entry, index: i, source: source)
            x.id = "har-" + RequestKey.bodyDigest(Array("\(i) \(entry.startedDateTime) \(x.method) \(x.url) \(Self.fingerprint(x))".utf8)).prefix(40)
            batch.append(x)
            if batch.count == 256 {
                summary.appended += try await record(batch, gate: gate)
                batch.removeAll(keepingCapacity: true)
            }
        }
        summary.appended += try await record(batch, gate: gate)
        summary.exchanges = har.log.entries.count
        return summary
    }

    static func fingerprint(_ x: ExchangeEntity) -> String {
        let body = x.responseBody.map(RequestKey.bodyDigest) ?? "-"
        return "\(x.status ?? 0) \(body) \(x.requestBody.map(RequestKey.bodyDigest) ?? "-")"
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let c): "\(key.stringValue) is missing at \(path(c))"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c): "wrong type at \(path(c)): \(c.debugDescription)"
        case DecodingError.dataCorrupted(let c): c.codingPath.isEmpty ? "not JSON (\(c.debugDescription))" : "bad value at \(path(c))"
        default: "\(error)"
        }
    }

    private static func path(_ c: DecodingError.Context) -> String {
        c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
    }

    /// Imports a WARC file's exchanges (`response` records with their `request`, `revisit`
    /// records with the payload they refer to), reading one record at a time. Record ids make a
    /// re-import append nothing.
    public func importWARC(
        path: String, source: String, gate: IngestGate, progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> TrafficImportSummary {
        let reader = try WARCReader(path: path)
        var summary = TrafficImportSummary()
        var requests: [String: WARCMapping.Request] = [:]
        var held: WARCRecord?  // a response whose request may come next
        var bodies: [String: String] = [:]  // payload digest → SHA-256 of the stored body
        var lastBody: [String: String] = [:]  // target URI → the digest of its last payload
        var batch: [ExchangeEntity] = []
        var batchBytes = 0

        func flush() async throws {
            guard !batch.isEmpty else { return }
            summary.appended += try await record(batch, gate: gate)
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
            progress?(reader.fileBytesRead)
        }
        func emit(_ r: WARCRecord, _ request: WARCMapping.Request?) async throws {
            var payload: [UInt8]?
            if r.type == "revisit" {
                let digest = r["WARC-Payload-Digest"] ?? WARCMapping.target(r).flatMap { lastBody[$0] }
                if let digest, let sha = bodies[digest] {
                    try await flush()  // the body may be in the batch not yet appended
                    payload = try await store.body(sha256: sha)
                }
                let status = HTTPMessage.parse(r.block).flatMap { Int($0.startLine.split(separator: " ").dropFirst().first ?? "") }
                if payload == nil && status != 304 { summary.unresolvedRevisits += 1 }
            }
            guard let x = WARCMapping.exchange(r, request: request, source: source, payload: payload) else {
                summary.skipped[r.type, default: 0] += 1
                return
            }
            if r.type == "response", let body = x.responseBody {
                let digest = r["WARC-Payload-Digest"] ?? WARCWriter.digest(body)
                bodies[digest] = RequestKey.bodyDigest(body)
                lastBody[x.url] = digest
            }
            summary.exchanges += 1
            batch.append(x)
            batchBytes += (x.responseBody?.count ?? 0) + (x.requestBody?.count ?? 0)
            if batch.count >= 256 || batchBytes >= 16 << 20 { try await flush() }
        }
        func ids(_ text: String?) -> [String] {
            (text ?? "").split(whereSeparator: { $0 == " " || $0 == "," }).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "<> ")) }
        }
        func recordID(_ r: WARCRecord) -> String { (r["WARC-Record-ID"] ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "<> ")) }

        while let r = try reader.next() {
            summary.records += 1
            switch r.type {
            case "request":
                guard let request = WARCMapping.request(r) else {
                    summary.skipped["request", default: 0] += 1
                    continue
                }
                if let h = held, ids(r["WARC-Concurrent-To"]).contains(recordID(h)) {
                    held = nil
                    try await emit(h, request)
                } else {
                    if let h = held {
                        held = nil
                        try await emit(h, nil)
                    }
                    requests[recordID(r)] = request
                    if requests.count > 4096 { requests.removeAll() }  // requests nobody answered: not kept forever
                }
            case "response", "revisit":
                if let h = held {
                    held = nil
                    try await emit(h, nil)
                }
                if let id = ids(r["WARC-Concurrent-To"]).first(where: { requests[$0] != nil }) {
                    try await emit(r, requests.removeValue(forKey: id))
                } else {
                    held = r
                }
            default:
                if let h = held {
                    held = nil
                    try await emit(h, nil)
                }
                summary.skipped[r.type, default: 0] += 1
            }
        }
        if let h = held { try await emit(h, nil) }
        summary.skipped["request", default: 0] += requests.count
        if summary.skipped["request"] == 0 { summary.skipped["request"] = nil }
        try await flush()
        summary.bytes = reader.fileBytesRead
        return summary
    }

    /// Writes `source`'s exchanges up to `seq` as a HAR 1.2 file, an entry at a time.
    public func exportHAR(source: String, through seq: UInt64, to path: String, creator: String) async throws -> TrafficExportSummary {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw FetchError(code: .other, message: "cannot write \(path); check the directory", url: path)
        }
        defer { try? file.close() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var summary = TrafficExportSummary()
        let creatorJSON = String(decoding: try encoder.encode(HARDto.Creator(name: "strata", version: creator)), as: UTF8.self)
        try file.write(contentsOf: Data("{\"log\":{\"version\":\"1.2\",\"creator\":\(creatorJSON),\"pages\":[],\"entries\":[\n".utf8))
        var first = true
        try await exchanges(source: source, through: seq) { chunk in
            var text = Data()
            for x in chunk {
                if !first { text.append(contentsOf: Array(",\n".utf8)) }
                first = false
                text.append(try encoder.encode(HARMapping.entry(x)))
                summary.exchanges += 1
                if case .failure = x.outcome { summary.failures += 1 }
            }
            try file.write(contentsOf: text)
        }
        try file.write(contentsOf: Data("\n]}}\n".utf8))
        summary.bytes = Int64(try file.offset())
        return summary
    }

    /// Writes `source`'s exchanges up to `seq` as WARC 1.1: a `warcinfo` record, then each
    /// response (or revisit) with its request, every record its own gzip member.
    public func exportWARC(source: String, through seq: UInt64, to path: String, software: String, now: Timestamp) async throws -> TrafficExportSummary {
        let writer = try WARCWriter(path: path, compress: !path.hasSuffix(".warc"))
        let file = (path as NSString).lastPathComponent
        let info = WARCMapping.warcinfo(file: file, software: software, source: source, through: seq, at: now)
        try writer.write(info)
        let infoID = info["WARC-Record-ID"]!
        var summary = TrafficExportSummary()
        try await exchanges(source: source, through: seq) { chunk in
            for x in chunk {
                let records = WARCMapping.records(x, warcinfo: infoID)
                if records.isEmpty { summary.failures += 1 } else { summary.exchanges += 1 }
                for r in records { try writer.write(r) }
            }
        }
        try writer.close()
        summary.records = writer.records
        summary.bytes = Int64((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)??.int64Value ?? 0)
        return summary
    }
}
