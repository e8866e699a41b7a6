import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// `RecordReader` reads a row written as one record (`ROW(a, b, …)`) field by field: each field
/// must come out as the driver decodes the same value sent as a column of its own (dates to the
/// bit), and a record read as something it is not must fail rather than misread.
@Suite struct RecordReaderTests {
    @Test func itReadsWhatTheDriverReadsForRandomValues() async throws {
        try await withTestDatabase { database in
            var random = SplitMix64(seed: 20_261_130)
            for round in 0..<200 {
                let values = RandomValues(&random, round: round)
                let (id, big, int, small) = (values.id, values.big, values.int, values.small)
                let (microseconds, flag, text) = (values.microseconds, values.flag, values.text)
                // The same values twice: as one record, then as columns of their own.
                let at = "'2000-01-01 00:00:00+00'::timestamptz + \(microseconds) * interval '1 microsecond'"
                let rows = try await database.systemQuery(
                    """
                    SELECT ROW(\(id)::uuid, NULL::uuid, \(big)::int8, \(int)::int4, \(small)::int2,
                               \(unescaped: at), NULL::timestamptz, 'infinity'::timestamptz,
                               '-infinity'::timestamptz, \(flag)::bool, \(text)::text, \(text)::varchar, NULL::text,
                               ''::text, NULL::bool, NULL::int4),
                           \(id)::uuid, NULL::uuid, \(big)::int8, \(int)::int4, \(small)::int2, \(unescaped: at),
                           NULL::timestamptz, 'infinity'::timestamptz, '-infinity'::timestamptz, \(flag)::bool,
                           \(text)::text, \(text)::varchar
                    """)
                let row = try #require(rows.first)
                let cells = row.makeRandomAccess()
                try RecordReader.read(row) { fields in
                    #expect(try fields.next() as UUID == (try cells[1].decode(UUID.self)))
                    #expect(try fields.next() as UUID? == nil)
                    #expect(try fields.next() as Int == (try cells[3].decode(Int.self)))
                    #expect(try fields.next() as Int == (try cells[4].decode(Int.self)))
                    #expect(try fields.next() as Int? == (try cells[5].decode(Int?.self)))
                    let date: Date = try fields.next()
                    #expect(
                        date.timeIntervalSinceReferenceDate.bitPattern
                            == (try cells[6].decode(Date.self)).timeIntervalSinceReferenceDate.bitPattern)
                    #expect(try fields.next() as Date? == nil)
                    #expect(try fields.next() as Date == (try cells[8].decode(Date.self)))
                    #expect(try fields.next() as Date? == (try cells[9].decode(Date?.self)))
                    #expect(try fields.next() as Bool == (try cells[10].decode(Bool.self)))
                    #expect(try fields.next() as String == (try cells[11].decode(String.self)))
                    #expect(try fields.next() as String? == (try cells[12].decode(String?.self)))
                    #expect(try fields.next() as String? == nil)
                    #expect(try fields.next() as String == "")
                    #expect(try fields.next() as Bool? == nil)
                    #expect(try fields.next() as Int? == nil)
                    #expect(big == Int64(try cells[3].decode(Int.self)))
                    #expect(throws: RecordReaderError.tooFewFields(16)) { try fields.next() as Int? }
                }
            }
        }
    }

    /// A field read as another type, `NULL` where a value must be, a record too short, or a column
    /// that is not a record: each an error naming the field, never a value from the wrong bytes.
    @Test func aRecordReadAsSomethingElseFails() async throws {
        try await withTestDatabase { database in
            let rows = try await database.systemQuery(
                """
                SELECT ROW(7::int4, 'x'::text, 7::numeric, NULL::uuid, 1.5::float8, 'x'::name), 7::int4
                """)
            let row = try #require(rows.first)
            try RecordReader.read(row) { fields in
                #expect(throws: RecordReaderError.unexpectedType(field: 0, found: .int4)) { try fields.next() as Date }
                #expect(throws: RecordReaderError.unexpectedType(field: 1, found: .text)) { try fields.next() as UUID }
                #expect(throws: RecordReaderError.unexpectedType(field: 2, found: .numeric)) {
                    try fields.next() as Int
                }
                #expect(throws: RecordReaderError.unexpectedNull(field: 3)) { try fields.next() as UUID }
                #expect(throws: RecordReaderError.unexpectedType(field: 4, found: .float8)) {
                    try fields.next() as Int?
                }
                #expect(throws: RecordReaderError.unexpectedType(field: 5, found: .name)) {
                    try fields.next() as String
                }
                #expect(throws: RecordReaderError.tooFewFields(6)) { try fields.next() as String? }
            }
            // The second column is not a record.
            let cells = row.makeRandomAccess()
            #expect(throws: RecordReaderError.notARecord(.int4)) { try RecordReader.read(cells[1]) { _ in } }
        }
    }

    /// Bytes no server sends are refused, not read past: a field count below zero, a header cut
    /// short, a length past the end or below -1, a uuid of fifteen bytes, a record in text.
    @Test func bytesNoServerSendsAreRefused() throws {
        func cell(_ bytes: [UInt8], format: PostgresFormat = .binary) -> PostgresCell {
            PostgresCell(
                bytes: ByteBuffer(bytes: bytes), dataType: .record, format: format, columnName: "row", columnIndex: 0)
        }
        func be32(_ value: Int32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        let uuidType = be32(Int32(bitPattern: PostgresDataType.uuid.rawValue))
        /// The first field of the record in `bytes`, read as `Value`.
        func first<Value>(_ bytes: [UInt8], as: Value.Type, _ read: (inout RecordReader) throws -> Value) throws {
            _ = try RecordReader.read(cell(bytes), read)
        }
        #expect(throws: RecordReaderError.notARecord(.record)) { try RecordReader.read(cell(be32(-1))) { _ in } }
        #expect(throws: RecordReaderError.notARecord(.record)) { try RecordReader.read(cell([0, 0])) { _ in } }
        #expect(throws: RecordReaderError.notARecord(.record)) {
            try RecordReader.read(cell(be32(1), format: .text)) { _ in }
        }
        #expect(throws: RecordReaderError.malformed(field: 0)) {
            try first(be32(1) + uuidType + [0, 0], as: UUID.self) { try $0.next() }
        }
        #expect(throws: RecordReaderError.malformed(field: 0)) {
            try first(be32(1) + uuidType + be32(16) + Array(repeating: 7, count: 15), as: UUID.self) { try $0.next() }
        }
        #expect(throws: RecordReaderError.malformed(field: 0)) {
            try first(be32(1) + uuidType + be32(-2), as: UUID?.self) { try $0.next() }
        }
        #expect(throws: RecordReaderError.unexpectedType(field: 0, found: .uuid)) {
            try first(be32(1) + uuidType + be32(15) + Array(repeating: 7, count: 15), as: UUID.self) { try $0.next() }
        }
        #expect(throws: RecordReaderError.tooFewFields(0)) { try first(be32(0), as: Int?.self) { try $0.next() } }
    }
}
