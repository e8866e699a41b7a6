import Foundation
import PostgresNIO

/// A time as PostgreSQL stores it, to the microsecond: what every `Date` sent to PostgreSQL goes
/// through (the interpolations below, for statements and prepared bindings alike). `Date`'s own
/// encoding in PostgresNIO truncates a `Double` product and lands a microsecond early for about
/// one time in fifty: a `Date` read from PostgreSQL went back a microsecond earlier, an event
/// created at `09:00:00.186Z` was stored at `.185999` and read back as `.185Z`, and a page
/// cursor repeated the last row of the page before (`TimestampPrecisionTests`). Rounding to the
/// nearest microsecond gives back exactly the microsecond a `Date` read from PostgreSQL came
/// from, and the nearest one to any other.
package struct ExactTimestamp: PostgresNonThrowingEncodable, PostgresArrayEncodable, Sendable {
    let microsecondsSince2000: Int64

    /// PostgreSQL's epoch, from which the driver counts `timestamptz` in both directions.
    static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    package init(microsecondsSince2000: Int64) {
        self.microsecondsSince2000 = microsecondsSince2000
    }

    /// `date` to the nearest microsecond. A date beyond what `Int64` microseconds hold (some
    /// 292,000 years from 2000; nothing this API accepts) is clamped to its ends.
    package init(_ date: Date) {
        let microseconds = (date.timeIntervalSince(Self.postgresEpoch) * 1_000_000).rounded()
        if microseconds.isNaN {
            self.init(microsecondsSince2000: 0)
        } else if microseconds <= -9.2e18 {
            self.init(microsecondsSince2000: Int64.min)
        } else if microseconds >= 9.2e18 {
            self.init(microsecondsSince2000: Int64.max)
        } else {
            self.init(microsecondsSince2000: Int64(microseconds))
        }
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
// Being concrete, these are chosen over PostgresNIO's generic ones wherever this module is
// imported, which every service's statements do.
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
}
