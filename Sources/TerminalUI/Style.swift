/// What a cell means, not how it looks: a ``Theme`` decides the look, so the same screen renders
/// in dark, light and monochrome terminals, and golden tests compare meaning.
package enum StyleRole: UInt8, Sendable, Hashable, CaseIterable {
    case normal, dim, strong, heading, border, title, selection, accent
    case added, removed, changed, warning, error, status, future, highlight, key

    /// One character per role, for golden style maps.
    package var code: Character {
        switch self {
        case .normal: "."
        case .dim: "d"
        case .strong: "b"
        case .heading: "h"
        case .border: "-"
        case .title: "t"
        case .selection: "S"
        case .accent: "a"
        case .added: "+"
        case .removed: "x"
        case .changed: "~"
        case .warning: "w"
        case .error: "E"
        case .status: "s"
        case .future: "f"
        case .highlight: "H"
        case .key: "k"
        }
    }
}

/// A terminal colour: one of 256 indexed colours or 24-bit.
package enum Color: Sendable, Hashable {
    case indexed(UInt8)
    case rgb(UInt8, UInt8, UInt8)
}

/// Text attributes (SGR).
package struct Attributes: OptionSet, Sendable, Hashable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }
    package static let bold = Attributes(rawValue: 1)
    package static let dim = Attributes(rawValue: 2)
    package static let italic = Attributes(rawValue: 4)
    package static let underline = Attributes(rawValue: 8)
    package static let reverse = Attributes(rawValue: 16)
    package static let strikethrough = Attributes(rawValue: 32)
}

/// How a cell looks: colours (nil: the terminal's default) and attributes.
package struct Appearance: Sendable, Hashable {
    package var foreground: Color?
    package var background: Color?
    package var attributes: Attributes
    package init(foreground: Color? = nil, background: Color? = nil, attributes: Attributes = []) {
        self.foreground = foreground; self.background = background; self.attributes = attributes
    }
    package static let plain = Appearance()
}

/// Maps roles to appearances. `monochrome` (for `NO_COLOR`) uses attributes only, so selection
/// and changes stay visible without colour.
package struct Theme: Sendable, Hashable {
    package var name: String
    package var usesColor: Bool
    private var table: [Appearance]

    package init(name: String, usesColor: Bool, _ map: [StyleRole: Appearance]) {
        self.name = name
        self.usesColor = usesColor
        table = StyleRole.allCases.map { map[$0] ?? .plain }
    }

    package func appearance(_ role: StyleRole) -> Appearance { table[Int(role.rawValue)] }

    /// For dark backgrounds; only the 16 base colours, which every colour terminal has.
    package static let dark = Theme(
        name: "dark", usesColor: true,
        [
            .dim: Appearance(foreground: .indexed(8)),
            .strong: Appearance(attributes: .bold),
            .heading: Appearance(foreground: .indexed(14), attributes: .bold),
            .border: Appearance(foreground: .indexed(8)),
            .title: Appearance(foreground: .indexed(15), attributes: .bold),
            .selection: Appearance(foreground: .indexed(0), background: .indexed(6)),
            .accent: Appearance(foreground: .indexed(6)),
            .added: Appearance(foreground: .indexed(10)),
            .removed: Appearance(foreground: .indexed(9), attributes: .strikethrough),
            .changed: Appearance(foreground: .indexed(11)),
            .warning: Appearance(foreground: .indexed(11), attributes: .bold),
            .error: Appearance(foreground: .indexed(15), background: .indexed(1), attributes: .bold),
            .status: Appearance(foreground: .indexed(15), background: .indexed(8)),
            .future: Appearance(foreground: .indexed(8), attributes: .dim),
            .highlight: Appearance(foreground: .indexed(0), background: .indexed(11)),
            .key: Appearance(foreground: .indexed(14), attributes: .bold)
        ])

    /// For light backgrounds: darker foregrounds, the same meanings.
    package static let light = Theme(
        name: "light", usesColor: true,
        [
            .dim: Appearance(foreground: .indexed(8)),
            .strong: Appearance(attributes: .bold),
            .heading: Appearance(foreground: .indexed(4), attributes: .bold),
            .border: Appearance(foreground: .indexed(7)),
            .title: Appearance(foreground: .indexed(0), attributes: .bold),
            .selection: Appearance(foreground: .indexed(15), background: .indexed(4)),
            .accent: Appearance(foreground: .indexed(4)),
            .added: Appearance(foreground: .indexed(2)),
            .removed: Appearance(foreground: .indexed(1), attributes: .strikethrough),
            .changed: Appearance(foreground: .indexed(5)),
            .warning: Appearance(foreground: .indexed(3), attributes: .bold),
            .error: Appearance(foreground: .indexed(15), background: .indexed(1), attributes: .bold),
            .status: Appearance(foreground: .indexed(0), background: .indexed(7)),
            .future: Appearance(foreground: .indexed(7)),
            .highlight: Appearance(foreground: .indexed(0), background: .indexed(3)),
            .key: Appearance(foreground: .indexed(4), attributes: .bold)
        ])

    /// No colour at all: reverse, bold, underline and dim carry the meaning.
    package static let monochrome = Theme(
        name: "monochrome", usesColor: false,
        [
            .dim: Appearance(attributes: .dim),
            .strong: Appearance(attributes: .bold),
            .heading: Appearance(attributes: [.bold, .underline]),
            .title: Appearance(attributes: .bold),
            .selection: Appearance(attributes: .reverse),
            .added: Appearance(attributes: .bold),
            .removed: Appearance(attributes: [.dim, .strikethrough]),
            .changed: Appearance(attributes: .underline),
            .warning: Appearance(attributes: .bold),
            .error: Appearance(attributes: [.bold, .reverse]),
            .status: Appearance(attributes: .reverse),
            .future: Appearance(attributes: .dim),
            .highlight: Appearance(attributes: [.bold, .underline]),
            .key: Appearance(attributes: .bold)
        ])

    /// `dark` or `light` from `COLORFGBG` ("15;0": light text on a dark background), else dark.
    package static func detect(colorfgbg: String?) -> Theme {
        guard let value = colorfgbg, let bg = value.split(separator: ";").last.flatMap({ Int($0) }) else { return .dark }
        return (bg == 7 || bg >= 9) && bg != 8 ? .light : .dark
    }
}
