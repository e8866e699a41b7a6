import Foundation
import PostgresNIO

/// Reads a row's cells in order, for reads of thousands of rows. `decode((A, B, …).self)` looks
/// up the tuple's type metadata on every row, and `makeRandomAccess()` copies the columns
/// first; in a calendar window read (about 3,000 rows) those were a quarter of the service's
/// time. Each `next()` decodes one concrete type, chosen by what the result is assigned to, as
/// PostgresNIO decodes it (an SQL `NULL` is nil for an optional and an error otherwise).
///
/// The binary forms those reads meet almost always (`uuid`; `int2`, `int4` and `int8` into an
/// `Int`; `timestamptz`; `bool`; `text` and `varchar`) are read in place, without the driver's
/// generic decode (its decoding context and a copy of the cell's buffer per cell), to the same
/// values the driver makes (`RowReaderTests` compares them over random values); anything else
/// goes to the driver, which decodes it or names what did not fit.
///
/// ```swift
/// var cells = RowReader(row)
/// let id: UUID = try cells.next()
/// let note: String? = try cells.next()
/// ```
package struct RowReader {
    private var cells: PostgresRow.Iterator

    package init(_ row: PostgresRow) {
        cells = row.makeIterator()
    }

    package mutating func next() throws -> UUID { try Self.read(cell()) }
    package mutating func next() throws -> UUID? { try Self.read(cell()) }
    package mutating func next() throws -> String { try Self.read(cell()) }
    package mutating func next() throws -> String? { try Self.read(cell()) }
    package mutating func next() throws -> Int { try Self.read(cell()) }
    package mutating func next() throws -> Int? { try Self.read(cell()) }
    package mutating func next() throws -> Double? { try cell().decode(Double?.self) }
    package mutating func next() throws -> Bool { try Self.read(cell()) }
    package mutating func next() throws -> Date { try Self.read(cell()) }
    package mutating func next() throws -> Date? { try Self.read(cell()) }
    package mutating func next() throws -> [Date] { try cell().decode([Date].self) }
    package mutating func next() throws -> [String] { try cell().decode([String].self) }
    package mutating func next() throws -> [UUID] { try cell().decode([UUID].self) }
    package mutating func next() throws -> [Int] { try cell().decode([Int].self) }
    package mutating func next() throws -> Int64 { try cell().decode(Int64.self) }

    private mutating func cell() throws -> PostgresCell {
        guard let cell = cells.next() else { throw RowReaderError.tooFewColumns }
        return cell
    }
}

// MARK: - The common binary forms, read in place

extension RowReader {
    /// PostgreSQL's epoch, as the driver counts `timestamptz` from it.
    private static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    /// The cell's bytes when it holds a value of `type` in binary of `length` bytes; nil
    /// otherwise (an SQL `NULL` too: the driver decides what that means).
    private static func binary(_ cell: PostgresCell, _ type: PostgresDataType, length: Int) -> ByteBuffer? {
        guard cell.format == .binary, cell.dataType == type, let bytes = cell.bytes, bytes.readableBytes == length
        else { return nil }
        return bytes
    }

    // Each type read in place when it can be, by the driver otherwise (its values, its errors).
    private static func read(_ cell: PostgresCell) throws -> UUID { try uuid(cell) ?? cell.decode(UUID.self) }
    private static func read(_ cell: PostgresCell) throws -> UUID? { try uuid(cell) ?? cell.decode(UUID?.self) }
    private static func read(_ cell: PostgresCell) throws -> String { try string(cell) ?? cell.decode(String.self) }
    private static func read(_ cell: PostgresCell) throws -> String? {
        try string(cell) ?? cell.decode(String?.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Int { try integer(cell) ?? cell.decode(Int.self) }
    private static func read(_ cell: PostgresCell) throws -> Int? { try integer(cell) ?? cell.decode(Int?.self) }
    private static func read(_ cell: PostgresCell) throws -> Bool { try bool(cell) ?? cell.decode(Bool.self) }
    private static func read(_ cell: PostgresCell) throws -> Date { try date(cell) ?? cell.decode(Date.self) }
    private static func read(_ cell: PostgresCell) throws -> Date? { try date(cell) ?? cell.decode(Date?.self) }

    private static func uuid(_ cell: PostgresCell) -> UUID? {
        binary(cell, .uuid, length: 16)?.withUnsafeReadableBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    private static func integer(_ cell: PostgresCell) -> Int? {
        guard cell.format == .binary, let bytes = cell.bytes else { return nil }
        switch (cell.dataType, bytes.readableBytes) {
        case (.int8, 8): return bytes.getInteger(at: bytes.readerIndex, as: Int64.self).map(Int.init)
        case (.int4, 4): return bytes.getInteger(at: bytes.readerIndex, as: Int32.self).map(Int.init)
        case (.int2, 2): return bytes.getInteger(at: bytes.readerIndex, as: Int16.self).map(Int.init)
        default: return nil
        }
    }

    /// Microseconds from PostgreSQL's epoch, made a date by the driver's own arithmetic (so the
    /// same bits: dates read here are compared with dates the driver read).
    private static func date(_ cell: PostgresCell) -> Date? {
        guard let bytes = binary(cell, .timestamptz, length: 8),
            let microseconds = bytes.getInteger(at: bytes.readerIndex, as: Int64.self)
        else { return nil }
        return Date(timeInterval: Double(microseconds) / Double(1_000_000), since: postgresEpoch)
    }

    private static func bool(_ cell: PostgresCell) -> Bool? {
        guard let bytes = binary(cell, .bool, length: 1) else { return nil }
        switch bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) {
        case 0: return false
        case 1: return true
        default: return nil
        }
    }

    private static func string(_ cell: PostgresCell) -> String? {
        guard cell.format == .binary, cell.dataType == .text || cell.dataType == .varchar, let bytes = cell.bytes
        else { return nil }
        return bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes)
    }
}

/// A query returned fewer columns than its reader reads, or another column than it names: a
/// mistake in the code, not the data.
package enum RowReaderError: Error {
    case tooFewColumns
    case unexpectedColumn(expected: String, found: String)
}

extension RowReader {
    /// The next cell, which must be the column named `column`: read in order (as fast as
    /// ``next()``) but by name, so a query whose columns moved fails at once instead of
    /// putting one column's value in another's place. An expression needs an alias
    /// (`EXISTS (…) AS creator_is_admin`, `m.role::text AS role`); a cast keeps the column's name.
    ///
    /// ```swift
    /// let id: UUID = try cells.next("id")
    /// let note: String? = try cells.next("note")
    /// ```
    package mutating func next<Value: PostgresDecodable>(_ column: String) throws -> Value {
        try cell(named: column).decode(Value.self)
    }

    // The types read in place, by name as in order.
    package mutating func next(_ column: String) throws -> UUID { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> UUID? { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> String { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> String? { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> Int { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> Int? { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> Bool { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> Date { try Self.read(cell(named: column)) }
    package mutating func next(_ column: String) throws -> Date? { try Self.read(cell(named: column)) }

    private mutating func cell(named column: String) throws -> PostgresCell {
        let cell = try cell()
        guard cell.columnName == column else {
            throw RowReaderError.unexpectedColumn(expected: column, found: cell.columnName)
        }
        return cell
    }
}
