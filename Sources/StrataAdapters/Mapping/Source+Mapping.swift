package import StrataDomain
package import EventStore
package import StrataData

extension Source {
    package init(entity e: SourceEntity) {
        let d = e.definition
        self.init(
            name: d.name, url: d.url, titlePath: d.title, subtitlePaths: d.subtitle, imagePath: d.image, indexPaths: d.index,
            hasDetails: d.detailURL != nil || d.detailURLField != nil,
            lastRun: e.lastRun.map(FetchRun.init(entity:)), lastSuccess: e.lastSuccess.map(FetchRun.init(entity:)))
        createURL = d.createURL
        updateURL = d.updateURL
        deleteURL = d.deleteURL
        ownerField = d.ownerField
        isRecorded = d.recorded ?? false
    }
}

extension FetchRun {
    package init(entity e: FetchRunEntity) {
        self.init(
            id: e.run, seq: e.seq, at: e.recordedAt.date,
            outcome: e.completed ? .completed(complete: e.complete) : .failed(e.error ?? "the fetch failed"),
            pages: e.pages, failures: e.failures, freshFor: e.maxAge.map(Double.init))
    }
}

extension FetchRunEntity {
    package init(_ run: FetchRun) {
        switch run.outcome {
        case .completed(let complete):
            self.init(
                run: run.id, seq: run.seq, recordedAt: Timestamp(run.at), completed: true, complete: complete, pages: run.pages, failures: run.failures,
                maxAge: run.freshFor.map { Int($0) })
        case .failed(let message):
            self.init(run: run.id, seq: run.seq, recordedAt: Timestamp(run.at), completed: false, pages: run.pages, error: message, failures: run.failures)
        }
    }
}

extension RefreshResult {
    package init(summary s: FetchSummary) {
        self.init(
            source: s.source, run: s.run, pages: s.pages, pagesNotModified: s.pagesNotModified, complete: s.complete, added: s.added,
            changed: s.changed + s.reappeared, reappeared: s.reappeared, removed: s.removed, details: s.details,
            detailsNotModified: s.detailsNotModified, images: s.images, bytes: s.bytes, failures: s.failures, seconds: s.seconds)
        retried = s.retried
        restored = s.restored
    }
}

extension LogEntry {
    package init(event e: RecordedEvent) {
        self.init(
            seq: e.seq, recordedAt: e.recordedAt.date, type: e.type, stream: e.stream,
            metadata: e.metadata.map { Field(path: $0.key, value: $0.value) }, payloadSize: e.payload?.size,
            payloadSHA256: e.payload?.hashHex, hash: e.hash.hex, id: e.id, schemaVersion: e.schemaVersion,
            previousHash: e.previousHash.hex)
    }
}
