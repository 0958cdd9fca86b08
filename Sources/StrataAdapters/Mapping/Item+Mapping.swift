package import StrataDomain
import EventStore
package import StrataData

extension Item {
    /// Maps a stored row to the domain, reading title, subtitle, fields and image URL through
    /// the source's paths.
    package init(entity e: ItemEntity, source: Source) {
        let lookup = { (path: String) -> JSONValue? in e.document.value(atPath: path) ?? e.detail?.value(atPath: path) }
        let title = source.titlePath.flatMap { lookup($0) }.flatMap(\.scalarText) ?? e.id
        self.init(
            source: e.source, id: e.id, title: title,
            subtitle: source.subtitlePaths.compactMap { lookup($0)?.scalarText },
            fields: source.indexPaths.map { Field(path: $0, value: Self.fieldText(e, path: $0)) },
            document: e.document, detail: e.detail,
            imageURL: e.image?.url ?? source.imagePath.flatMap { lookup($0) }.flatMap(\.scalarText).map { resolve($0, against: source.url) ?? $0 },
            image: e.image.map(ItemImage.init(entity:)),
            version: e.version, firstSeq: e.firstSeq, changedSeq: e.changedSeq, isRemoved: e.removed
        )
        pending =
            switch e.pending {
            case .none: .none;
            case .pending: .pending;
            case .conflicted: .conflicted
            }
    }

    /// A column's text: a scalar as it is; the scalars a path reaches through arrays joined
    /// (`bug, ui`); empty for an object or nothing.
    static func fieldText(_ e: ItemEntity, path: String) -> String {
        if let v = e.document.value(atPath: path) ?? e.detail?.value(atPath: path), let t = v.scalarText { return t }
        var found = e.document.values(atPath: path)
        if found.isEmpty, let detail = e.detail { found = detail.values(atPath: path) }
        return found.compactMap(\.scalarText).joined(separator: ", ")
    }

    /// Maps a network item to the domain: a new, unsaved first version.
    package init(dto: ItemDto, source: Source) {
        self.init(entity: ItemEntity(source: source.name, id: dto.id, version: 1, firstSeq: 0, changedSeq: 0, document: dto.fields), source: source)
    }

    /// Adds a detail response to the item.
    package func with(detail dto: ItemDetailDto) -> Item {
        var item = self
        item.detail = dto.document
        return item
    }
}

extension ItemEntity {
    /// The stored row of a domain item.
    package init(_ item: Item) {
        self.init(
            source: item.source, id: item.id, version: item.version, firstSeq: item.firstSeq, changedSeq: item.changedSeq,
            removed: item.isRemoved, document: item.document, detail: item.detail, image: item.image.map(ImageEntity.init))
    }
}

extension ItemImage {
    package init(entity e: ImageEntity) {
        self.init(url: e.url, sha256: e.sha256, size: e.size, contentType: e.contentType)
    }
}

extension ImageEntity {
    package init(_ image: ItemImage) {
        self.init(url: image.url, sha256: image.sha256, size: image.size, contentType: image.contentType)
    }
}
