import Foundation
import PostgresNIO

/// A time as PostgreSQL stores it, to the microsecond: what every `Date` sent to PostgreSQL goes
/// through (the interpolations and bindings below). `Date`'s own encoding in PostgresNIO
/// truncates a `Double` product and lands a microsecond early for about one time in fifty: an
/// event created at `09:00:00.186Z` was stored at `.185999` and read back as `.185Z`
/// (`TimestampPrecisionTests`). Here the whole seconds and the fraction are counted apart (the
/// fraction of a `Date` is exact), and the fraction rounded to the nearest microsecond: a `Date`
/// read from PostgreSQL goes back as the microsecond it came from as far as a `Date` can tell
/// microseconds apart (until 2137; past it a `Double`'s step there is nearly a microsecond), and
/// any time to the millisecond, as this API writes them, goes and comes back exact.
package struct ExactTimestamp: PostgresNonThrowingEncodable, PostgresArrayEncodable, Sendable {
    let microsecondsSince2000: Int64

    /// PostgreSQL's epoch, from which the driver counts `timestamptz` in both directions.
    static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    package init(microsecondsSince2000: Int64) {
        self.microsecondsSince2000 = microsecondsSince2000
    }

    /// `date` to the nearest microsecond. A time beyond what this can count (some 290,000 years
    /// from 2000; nothing this API accepts), or not a number, is sent as PostgreSQL's
    /// `-infinity` or `infinity`.
    package init(_ date: Date) {
        let seconds = date.timeIntervalSinceReferenceDate
        if let microseconds = Self.microseconds(since2001: seconds) {
            self.init(microsecondsSince2000: microseconds + 31_622_400_000_000)
        } else {
            self.init(microsecondsSince2000: seconds > 0 ? .max : .min)
        }
    }

    /// Microseconds from 2001 (`Date`'s own epoch) to `seconds` after it, the nearest; nil past
    /// some 290,000 years either way, or for what is not a number.
    static func microseconds(since2001 seconds: Double) -> Int64? {
        guard seconds.isFinite, abs(seconds) < 9e12 else { return nil }
        let whole = seconds.rounded(.down)
        return Int64(whole) * 1_000_000 + Int64(((seconds - whole) * 1_000_000).rounded())
    }

    /// Microseconds from 1970, the nearest, as ``init(_:)`` counts them (past its range, its
    /// ends: nothing this API writes).
    package static func microsecondsSince1970(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSinceReferenceDate
        let microseconds = Self.microseconds(since2001: seconds) ?? (seconds > 0 ? 9 : -9) * 1_000_000_000_000_000_000
        return microseconds + 978_307_200_000_000
    }

    /// The time as the driver reads it back from PostgreSQL.
    package var date: Date {
        Date(timeInterval: Double(microsecondsSince2000) / 1_000_000, since: Self.postgresEpoch)
    }

    package static var psqlType: PostgresDataType { .timestamptz }
    package static var psqlArrayType: PostgresDataType { .timestamptzArray }
    package static var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(microsecondsSince2000)
    }
}

// A `Date` in a statement or a prepared statement's bindings is sent as its `ExactTimestamp`.
// Being concrete, these are chosen over PostgresNIO's generic ones in every module that depends
// on this one (every service's; extension members reach a whole module, not only the files that
// import this one, while `MemberImportVisibility` is off, as it is here). A call with an
// encoding `context:` is not covered: none sends a `Date` that way.
extension PostgresQuery.StringInterpolation {
    package mutating func appendInterpolation(_ value: Date) {
        appendInterpolation(ExactTimestamp(value))
    }

    package mutating func appendInterpolation(_ value: Date?) {
        appendInterpolation(value.map(ExactTimestamp.init))
    }

    package mutating func appendInterpolation(_ value: [Date]) {
        appendInterpolation(value.map(ExactTimestamp.init))
    }

    package mutating func appendInterpolation(_ value: [Date]?) {
        appendInterpolation(value.map { $0.map(ExactTimestamp.init) })
    }
}

extension PostgresBindings {
    package mutating func append(_ value: Date) {
        append(ExactTimestamp(value))
    }

    package mutating func append(_ value: Date?) {
        append(value.map(ExactTimestamp.init))
    }

    package mutating func append(_ value: [Date]) {
        append(value.map(ExactTimestamp.init))
    }

    package mutating func append(_ value: [Date]?) {
        append(value.map { $0.map(ExactTimestamp.init) })
    }
}
