import EventStore
import Foundation

/// Metadata as JSON text (`[["key","value"],…]`), for the `jsonb` column.
enum TeamLogJSON {
    static func encode(_ metadata: [RecordedEvent.Metadatum]) -> String {
        let pairs = metadata.map { [$0.key, $0.value] }
        let data = try! JSONSerialization.data(withJSONObject: pairs, options: [.withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    static func decode(_ text: String) throws -> [RecordedEvent.Metadatum] {
        guard let pairs = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String]] else {
            throw TeamLogError(.corrupted, "an event's metadata in the team log is not a list of pairs")
        }
        return try pairs.map {
            guard $0.count == 2 else { throw TeamLogError(.corrupted, "an event's metadata in the team log is not a list of pairs") }
            return RecordedEvent.Metadatum(key: $0[0], value: $0[1])
        }
    }
}
