import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// `RowReader` reads the common binary forms in place instead of through the driver's decode:
/// what it reads must be what the driver reads, for every value PostgreSQL sends (dates are
/// compared with dates the driver made, so the same bits, not just the same second), and what
/// it does not read itself (another type, `NULL` into a value that cannot be nil) must still
/// reach the driver.
@Suite struct RowReaderTests {
    @Test func itReadsWhatTheDriverReadsForRandomValues() async throws {
        try await withTestDatabase { database in
            var random = SplitMix64(seed: 20_261_129)
            for round in 0..<200 {
                let values = RandomValues(&random, round: round)
                let (id, big, int, small) = (values.id, values.big, values.int, values.small)
                let (microseconds, flag, text) = (values.microseconds, values.flag, values.text)
                let rows = try await database.systemQuery(
                    """
                    SELECT \(id)::uuid AS id, NULL::uuid AS none, \(big)::int8 AS big, \(int)::int4 AS int,
                           \(small)::int2 AS small,
                           '2000-01-01 00:00:00+00'::timestamptz + \(microseconds) * interval '1 microsecond' AS at,
                           NULL::timestamptz AS never, 'infinity'::timestamptz AS later,
                           '-infinity'::timestamptz AS earlier, \(flag)::bool AS flag, \(text)::text AS text,
                           \(text)::varchar AS varchar, NULL::text AS nothing, ''::text AS empty
                    """)
                let row = try #require(rows.first)
                let cells = row.makeRandomAccess()
                var reader = RowReader(row)
                #expect(try reader.next() as UUID == (try cells[0].decode(UUID.self)))
                #expect(try reader.next() as UUID? == nil)
                #expect(try reader.next() as Int == (try cells[2].decode(Int.self)))
                #expect(try reader.next() as Int == (try cells[3].decode(Int.self)))
                #expect(try reader.next() as Int? == (try cells[4].decode(Int?.self)))
                let date: Date = try reader.next()
                #expect(
                    date.timeIntervalSinceReferenceDate.bitPattern
                        == (try cells[5].decode(Date.self)).timeIntervalSinceReferenceDate.bitPattern)
                #expect(try reader.next() as Date? == nil)
                #expect(try reader.next() as Date == (try cells[7].decode(Date.self)))
                #expect(try reader.next() as Date? == (try cells[8].decode(Date?.self)))
                #expect(try reader.next() as Bool == flag)
                #expect(try reader.next() as String == text)
                #expect(try reader.next() as String? == text)
                #expect(try reader.next() as String? == nil)
                #expect(try reader.next() as String == "")
                #expect(big == Int64(try cells[2].decode(Int.self)))
                // By name, the same values.
                var named = RowReader(row)
                #expect(try named.next("id") as UUID == id)
                #expect(try named.next("none") as UUID? == nil)
                #expect(try named.next("big") as Int == Int(big))
                #expect(try named.next("int") as Int? == Int(int))
                #expect(try named.next("small") as Int == Int(small))
                #expect(try named.next("at") as Date == date)
                #expect(try named.next("never") as Date? == nil)
                #expect(try named.next("later") as Date? == (try cells[7].decode(Date.self)))
                #expect(try named.next("earlier") as Date == (try cells[8].decode(Date.self)))
                #expect(try named.next("flag") as Bool == flag)
                #expect(try named.next("text") as String? == text)
                #expect(try named.next("varchar") as String == text)
                #expect(try named.next("nothing") as String? == nil)
                #expect(throws: RowReaderError.self) { try named.next("text") as String }
            }
        }
    }

    /// What it does not read itself goes to the driver: a `NULL` where a value must be, and
    /// types other than the ones it knows (a `numeric` into an `Int`, an `int4` into a `Date`, a
    /// `name` or a `uuid` into a `String`).
    @Test func whatItDoesNotReadItselfTheDriverDecidesOn() async throws {
        try await withTestDatabase { database in
            let rows = try await database.systemQuery(
                """
                SELECT NULL::uuid, NULL::timestamptz, 7::numeric, 7::int4, 'x'::name, NULL::bool, NULL::int8,
                       NULL::text, NULL::int4, '00000000-0000-0000-0000-00000000002a'::uuid
                """)
            let row = try #require(rows.first)
            var reader = RowReader(row)
            #expect(throws: PostgresDecodingError.self) { try reader.next() as UUID }
            #expect(throws: PostgresDecodingError.self) { try reader.next() as Date }
            #expect(throws: PostgresDecodingError.self) { try reader.next() as Int }
            #expect(throws: PostgresDecodingError.self) { try reader.next() as Date }
            #expect(try reader.next() as String == "x")
            #expect(throws: PostgresDecodingError.self) { try reader.next() as Bool }
            #expect(throws: PostgresDecodingError.self) { try reader.next() as Int }
            #expect(throws: PostgresDecodingError.self) { try reader.next() as String }
            #expect(try reader.next() as Int? == nil)
            // The driver writes a uuid read as text in its own (upper-case) form.
            #expect(try reader.next() as String == "00000000-0000-0000-0000-00000000002A")
            #expect(throws: RowReaderError.self) { try reader.next() as Int }
        }
    }
}
