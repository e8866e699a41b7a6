/// Why a recurrence rule was refused.
///
/// `message` is written for the person who typed the rule: it names the offending rule part and is safe to
/// return in a 422 (any echoed input is truncated and stripped to printable ASCII).
package struct RecurrenceRuleError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, extensible code in the style of postgres-nio's `PSQLError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case malformed
            case unsupportedPart
            case unknownPart
            case duplicatePart
            case missingPart
            case invalidValue
            case conflictingParts
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// Not `NAME=VALUE;NAME=VALUE`, or longer than any real rule.
        package static let malformed = Code(.malformed)
        /// A valid RFC 5545 part (or FREQ value) this engine does not implement, e.g. BYHOUR or FREQ=HOURLY.
        package static let unsupportedPart = Code(.unsupportedPart)
        package static let unknownPart = Code(.unknownPart)
        package static let duplicatePart = Code(.duplicatePart)
        /// FREQ is absent.
        package static let missingPart = Code(.missingPart)
        /// A value that does not parse or is out of range.
        package static let invalidValue = Code(.invalidValue)
        /// Parts that RFC 5545 forbids together, e.g. COUNT with UNTIL.
        package static let conflictingParts = Code(.conflictingParts)

        package var description: String { base.rawValue }
    }

    package let code: Code
    /// The rule part at fault (`"BYHOUR"`, `"INTERVAL"`), or nil when the rule as a whole is.
    package let part: String?
    package let message: String

    init(_ code: Code, part: String?, _ message: String) {
        self.code = code
        self.part = part
        self.message = message
    }

    package var description: String { message }

    /// A short, printable rendering of user input for inclusion in a message.
    static func quoted(_ text: some StringProtocol) -> String {
        let printable = text.unicodeScalars.prefix(24).map { scalar in
            (0x20..<0x7F).contains(scalar.value) && scalar != "'" ? Character(scalar) : "?"
        }
        return "'" + String(printable) + (text.unicodeScalars.count > 24 ? "…'" : "'")
    }
}
