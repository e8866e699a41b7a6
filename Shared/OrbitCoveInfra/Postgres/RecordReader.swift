import Foundation
import PostgresNIO

/// Reads a row written as one anonymous record (`SELECT ROW(a, b, …) FROM …`), field by field,
/// from PostgreSQL's binary form. The driver makes a cell for every column of every row it is
/// asked for (its buffer and column name retained and released each time); a read of a thousand
/// rows of fifteen columns spent most of its decoding there. As one record the row is one cell,
/// and its fields are read in place.
///
/// Each field must be the type it is read as (`uuid`; `int2`, `int4` or `int8` into an `Int`;
/// `timestamptz`; `bool`; `text` or `varchar`), read to the values the driver makes of them
/// (`RecordReaderTests` compares them); an SQL `NULL` is nil for an optional and an error
/// otherwise, as the driver has it. Anything else is a ``RecordReaderError``: a mistake in the
/// statement, not the data.
///
/// ```swift
/// var fields = try RecordReader(row)
/// let id: UUID = try fields.next()
/// let note: String? = try fields.next()
/// ```
package struct RecordReader {
    private var bytes: ByteBuffer
    private var remaining: Int
    private var field = 0

    /// The record in the row's first column.
    package init(_ row: PostgresRow) throws {
        var cells = row.makeIterator()
        guard let cell = cells.next() else { throw RecordReaderError.notARecord(nil) }
        try self.init(cell)
    }

    package init(_ cell: PostgresCell) throws {
        guard cell.dataType == .record, cell.format == .binary, var bytes = cell.bytes,
            let count = bytes.readInteger(as: Int32.self), count >= 0
        else { throw RecordReaderError.notARecord(cell.dataType) }
        self.bytes = bytes
        remaining = Int(count)
    }

    package mutating func next() throws -> UUID { try value(BinaryValue.uuid) }
    package mutating func next() throws -> UUID? { try optional(BinaryValue.uuid) }
    package mutating func next() throws -> String { try value(BinaryValue.string) }
    package mutating func next() throws -> String? { try optional(BinaryValue.string) }
    package mutating func next() throws -> Int { try value(BinaryValue.integer) }
    package mutating func next() throws -> Int? { try optional(BinaryValue.integer) }
    package mutating func next() throws -> Bool { try value(BinaryValue.bool) }
    package mutating func next() throws -> Bool? { try optional(BinaryValue.bool) }
    package mutating func next() throws -> Date { try value(BinaryValue.date) }
    package mutating func next() throws -> Date? { try optional(BinaryValue.date) }

    private mutating func value<Value>(_ read: BinaryValue.Read<Value>) throws -> Value {
        guard let value = try optional(read) else { throw RecordReaderError.unexpectedNull(field: field - 1) }
        return value
    }

    /// The next field: its type's oid, its length (-1 for `NULL`), its bytes. After a
    /// `malformed` field the record cannot be read further.
    private mutating func optional<Value>(_ read: BinaryValue.Read<Value>) throws -> Value? {
        guard remaining > 0 else { throw RecordReaderError.tooFewFields(field) }
        guard let oid = bytes.readInteger(as: UInt32.self), let length = bytes.readInteger(as: Int32.self)
        else { throw RecordReaderError.malformed(field: field) }
        remaining -= 1
        field += 1
        let type = PostgresDataType(oid)
        if length == -1 { return nil }
        // Read in place, without a slice of the buffer (a retain and release per field).
        let (start, count) = (bytes.readerIndex, Int(length))
        guard count >= 0, count <= bytes.readableBytes else { throw RecordReaderError.malformed(field: field - 1) }
        let value = read(type, bytes, start, count)
        bytes.moveReaderIndex(forwardBy: count)
        guard let value else { throw RecordReaderError.unexpectedType(field: field - 1, found: type) }
        return value
    }
}

/// A record read as something it is not: a mistake in the statement or its reader.
package enum RecordReaderError: Error, Equatable {
    /// The column is not an anonymous record in binary (its type, if there was a column).
    case notARecord(PostgresDataType?)
    /// The record has fewer fields than were read (the index of the one asked for).
    case tooFewFields(Int)
    /// A field's value is not the type (or the length of the type) it was read as.
    case unexpectedType(field: Int, found: PostgresDataType)
    /// A field that cannot be nil is `NULL`.
    case unexpectedNull(field: Int)
    /// The bytes end inside a field, or its length is not one PostgreSQL sends.
    case malformed(field: Int)
}
