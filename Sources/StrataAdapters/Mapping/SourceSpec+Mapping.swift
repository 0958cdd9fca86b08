package import StrataDomain
package import StrataData
package import StrataJSON

extension SourceSpec {
    /// The spec of a stored definition.
    package init(_ d: SourceDefinition) {
        self.init(
            name: d.name, url: d.url, items: d.items, id: d.id, title: d.title, subtitle: d.subtitle, image: d.image, detailURL: d.detailURL,
            detailURLField: d.detailURLField, next: d.next, pageParam: d.pageParam, sizeParam: d.sizeParam, pageSize: d.pageSize, index: d.index,
            headers: d.headers, cursorPath: d.cursorPath, cursorParam: d.cursorParam, offsetParam: d.offsetParam, totalPath: d.totalPath,
            limitParam: d.limitParam, afterParam: d.afterParam, hasMorePath: d.hasMorePath)
        createURL = d.createURL
        updateURL = d.updateURL
        updateMethod = d.updateMethod
        patchFormat = d.patchFormat
        deleteURL = d.deleteURL
        ownerField = d.ownerField
        schedule = d.schedule.map(SourceSchedule.init)
        ignore = d.ignore ?? []
        isRecorded = d.recorded ?? false
        redact = d.redact ?? []
        redactHeaders = d.redactHeaders ?? []
        keepSeconds = d.keep
        keepVersions = d.keepVersions
    }

    /// The definition the fetcher reads and the log stores.
    package var definition: SourceDefinition {
        var d = SourceDefinition(
            name: name, url: url, items: items, id: id, title: title, subtitle: subtitle, image: image, detailURL: detailURL, detailURLField: detailURLField,
            next: next, pageParam: pageParam, sizeParam: sizeParam, pageSize: pageSize, index: index, headers: headers, cursorPath: cursorPath,
            cursorParam: cursorParam, offsetParam: offsetParam, totalPath: totalPath, limitParam: limitParam, afterParam: afterParam, hasMorePath: hasMorePath)
        d.createURL = createURL
        d.updateURL = updateURL
        d.updateMethod = updateMethod
        d.patchFormat = patchFormat
        d.deleteURL = deleteURL
        d.ownerField = ownerField
        d.schedule = schedule.map(\.definition)
        d.ignore = ignore.isEmpty ? nil : ignore
        d.recorded = isRecorded ? true : nil
        d.redact = redact.isEmpty ? nil : redact
        d.redactHeaders = redactHeaders.isEmpty ? nil : redactHeaders
        d.keep = keepSeconds
        d.keepVersions = keepVersions
        return d
    }

    /// The spec as shown to people and exported: a literal credential (from a store defined
    /// before literals were refused) as `[hidden]`.
    package var masked: SourceSpec { SourceSpec(definition.masked) }

    /// The spec as JSON, keys sorted (`source show`, `GET /sources`).
    package var json: JSONValue { definition.json }

    /// Checks the spec as ``ManageSources/define(_:replace:keepingLiteralSecrets:)`` will: the
    /// Domain's rules, then no literal credential in a header unless it is kept out of the log.
    /// - Throws: ``SpecProblem``, or ``RepositoryError`` `invalidQuery` for a literal credential.
    package func validateForDefinition(keepingLiteralSecrets: Bool) throws {
        try validate()
        guard !keepingLiteralSecrets, let header = definition.literalSecretHeaders.first else { return }
        throw RepositoryError(
            .invalidQuery,
            "source \(name): header \(header) holds a literal credential, which would be stored in the log and shown with the definition and in exports",
            next: .keepSecretOut(header: header))
    }
}

extension SourceSchedule {
    init(_ s: FetchSchedule) {
        let details: RefreshRequest.Details =
            switch s.details {
            case "all": .all(maxAge: nil)
            case "changed": .changed
            default: .none
            }
        self.init(every: s.every, jitter: s.jitter, details: details, images: s.images)
    }

    var definition: FetchSchedule {
        let details: String? =
            switch self.details {
            case .none: nil
            case .changed: "changed"
            case .all: "all"
            }
        return FetchSchedule(every: every, jitter: jitter, details: details, images: images)
    }
}
