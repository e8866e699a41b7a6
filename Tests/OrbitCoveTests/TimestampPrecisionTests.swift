import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// A time sent to PostgreSQL is the microsecond it names. PostgresNIO's own `Date` encoding
/// truncates a `Double` product and lands a microsecond early for about one time in fifty (found
/// by a property test: 448 of 20,000 random microseconds from 1900 to 2200): an event created
/// at `09:00:00.186Z` was stored at `.185999` and read back as `.185Z`.
@Suite struct TimestampPrecisionTests {
    /// Random microseconds from 1900 to 2130, each as the `Date` the driver reads back for it,
    /// sent alone, optional, and in an array: PostgreSQL must hold exactly those microseconds.
    /// (A `Date` holds every microsecond until 2137; past it a `Double`'s step near the date is
    /// almost a microsecond, and whole milliseconds, which this API writes, still come back:
    /// the event test below.)
    @Test func everyMicrosecondSentIsTheOneStored() async throws {
        var random = SplitMix64(seed: 20_261_130)
        // 1900 to 2130, in microseconds from 1970.
        let (low, high): (Int64, Int64) = (-2_208_988_800_000_000, 5_049_820_800_000_000)
        let micros = (0..<2_000).map { _ in low + Int64(random.next() % UInt64(high - low)) }
        let dates = micros.map { Date(timeInterval: Double($0 - 946_684_800_000_000) / 1_000_000, since: epoch) }
        try await withTestDatabase { database in
            let stored = try await database.systemQuery(
                "SELECT (extract(epoch FROM t) * 1000000)::int8 FROM unnest(\(dates)) WITH ORDINALITY AS u(t, n) ORDER BY n"
            ).map { try $0.decode(Int64.self) }
            #expect(stored == micros)
            for (index, date) in dates.prefix(200).enumerated() {
                let optional: Date? = date
                let row = try #require(
                    try await database.systemQuery(
                        "SELECT (extract(epoch FROM \(date)) * 1000000)::int8, (extract(epoch FROM \(optional)) * 1000000)::int8"
                    ).first)
                let (alone, maybe) = try row.decode((Int64, Int64).self)
                #expect(alone == micros[index] && maybe == micros[index], "\(micros[index])")
            }
        }
    }

    /// Random times to the millisecond from 1900 to 2200, as the API parses them from clients,
    /// sent in an array and through a prepared statement's bindings: PostgreSQL holds exactly
    /// those milliseconds, and each comes back written as it was sent.
    @Test func everyMillisecondSentComesBackAsSent() async throws {
        var random = SplitMix64(seed: 20_261_201)
        // 1900 to 2200, in milliseconds from 1970.
        let (low, high): (Int64, Int64) = (-2_208_988_800_000, 7_258_118_400_000)
        let millis = (0..<2_000).map { _ in low + Int64(random.next() % UInt64(high - low)) }
        let texts = millis.map { JSONCoding.formatTimestamp(Date(timeIntervalSince1970: Double($0) / 1_000)) }
        let dates = try texts.map { try #require(JSONCoding.parseTimestamp($0)) }
        try await withTestDatabase { database in
            let rows = try await database.systemQuery(
                "SELECT (extract(epoch FROM t) * 1000)::int8, t FROM unnest(\(dates)) WITH ORDINALITY AS u(t, n) ORDER BY n"
            )
            let stored = try rows.map { try $0.decode((Int64, Date).self) }
            #expect(stored.map(\.0) == millis)
            #expect(stored.map { JSONCoding.formatTimestamp($0.1) } == texts)
            for (index, date) in dates.prefix(200).enumerated() {
                var bindings = PostgresBindings()
                bindings.append(date)
                bindings.append([date, date] as [Date]?)
                let row = try #require(
                    try await database.systemQuery(
                        PostgresQuery(
                            unsafeSQL:
                                "SELECT (extract(epoch FROM $1) * 1000)::int8, (extract(epoch FROM ($2::timestamptz[])[2]) * 1000)::int8",
                            binds: bindings)
                    ).first)
                let (alone, inArray) = try row.decode((Int64, Int64).self)
                #expect(alone == millis[index] && inArray == millis[index], "\(texts[index])")
            }
        }
    }

    /// What a client sends to the millisecond comes back to the millisecond.
    @Test func anEventsMillisecondsComeBackAsSent() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            for (year, millisecond) in [
                (2031, 186), (2031, 334), (1901, 999), (2120, 1), (2136, 999), (2140, 186), (2199, 7),
            ] {
                let sent = String(format: "%04d-06-10T09:00:00.%03dZ", year, millisecond)
                let event = try await api.createEvent(in: club, by: coach, #"{"title":"x","startsAt":"\#(sent)"}"#)
                let read = try await api.call(.get, "/api/v1/communities/\(club.id)/events/\(event.id)", as: coach)
                #expect(
                    JSONCoding.formatTimestamp(try read.data(CalendarEvent.self).startsAt) == sent,
                    "\(sent)")
            }
        }
    }

    private let epoch = Date(timeIntervalSince1970: 946_684_800)
}
