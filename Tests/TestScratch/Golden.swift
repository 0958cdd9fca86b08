public import Foundation
public import Testing

/// Golden files: `text` compared byte for byte with `file`, or written to it when
/// `STRATA_UPDATE_GOLDENS` is set (after a deliberate change; then read the diff).
public enum Golden {
    public static func check(_ text: String, file: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if ProcessInfo.processInfo.environment["STRATA_UPDATE_GOLDENS"] != nil {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let expected = try #require(
            try? String(contentsOf: file, encoding: .utf8), "missing golden \(file.lastPathComponent)",
            sourceLocation: sourceLocation)
        #expect(text == expected, "\(file.lastPathComponent) differs", sourceLocation: sourceLocation)
    }
}
