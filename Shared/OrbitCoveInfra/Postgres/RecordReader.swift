import Foundation
import PostgresNIO

/// Reads a row written as one anonymous record (`SELECT ROW(a, b, …) FROM …`), field by field,
/// from PostgreSQL's binary form. The driver makes a cell for every column of every row it is
/// asked for (its buffer and column name retained and released each time); a read of a thousand
/// rows of fifteen columns spent most of its decoding there. As one record the row is one cell,
/// and its fields are read in place, from the cell's bytes, while `read` lends them.
///
/// Each field must be the type it is read as (`uuid`; `int2`, `int4` or `int8` into an `Int`;
/// `timestamptz`; `bool`; `text` or `varchar`), read to the values the driver makes of them
/// (`RecordReaderTests` compares them); an SQL `NULL` is nil for an optional and an error
/// otherwise, as the driver has it. Anything else is a ``RecordReaderError``: a mistake in the
/// statement, not the data.
///
/// ```swift
/// let (id, note) = try RecordReader.read(row) { fields in
///     (try fields.next() as UUID, try fields.next() as String?)
/// }
/// ```
package struct RecordReader: ~Copyable {
    /// The record's bytes, lent by `read` for its body alone.
    private let bytes: UnsafeRawBufferPointer
    private var offset: Int
    private var remaining: Int
    private var field = 0

    private init(_ bytes: UnsafeRawBufferPointer, fields: Int) {
        self.bytes = bytes
        offset = 4
        remaining = fields
    }

    /// `body` reading the record in the row's first column.
    package static func read<Result>(
        _ row: PostgresRow, _ body: (inout RecordReader) throws -> Result
    ) throws -> Result {
        var cells = row.makeIterator()
        guard let cell = cells.next() else { throw RecordReaderError.notARecord(nil) }
        return try read(cell, body)
    }

    /// `body` reading the record in `cell`. The reader cannot be copied, so it does not outlive
    /// `body`, nor the bytes it reads.
    package static func read<Result>(
        _ cell: PostgresCell, _ body: (inout RecordReader) throws -> Result
    ) throws -> Result {
        guard cell.dataType == .record, cell.format == .binary, let bytes = cell.bytes else {
            throw RecordReaderError.notARecord(cell.dataType)
        }
        return try bytes.withUnsafeReadableBytes { bytes in
            guard bytes.count >= 4 else { throw RecordReaderError.notARecord(cell.dataType) }
            let count = BinaryValue.bigEndian(bytes, as: Int32.self)
            guard count >= 0 else { throw RecordReaderError.notARecord(cell.dataType) }
            var reader = RecordReader(bytes, fields: Int(count))
            return try body(&reader)
        }
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
        guard bytes.count - offset >= 8 else { throw RecordReaderError.malformed(field: field) }
        let type = PostgresDataType(BinaryValue.bigEndian(bytes, at: offset, as: UInt32.self))
        let length = Int(BinaryValue.bigEndian(bytes, at: offset + 4, as: Int32.self))
        offset += 8
        remaining -= 1
        field += 1
        if length == -1 { return nil }
        guard length >= 0, length <= bytes.count - offset else { throw RecordReaderError.malformed(field: field - 1) }
        let value = read(type, UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]))
        offset += length
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
