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
    /// The cell's value read by `read` when it is in binary; nil otherwise (an SQL `NULL` too:
    /// the driver decides what that means).
    private static func inPlace<Value>(_ cell: PostgresCell, _ read: BinaryValue.Read<Value>) -> Value? {
        guard cell.format == .binary, let bytes = cell.bytes else { return nil }
        return bytes.withUnsafeReadableBytes { read(cell.dataType, $0) }
    }

    // Each type read in place when it can be, by the driver otherwise (its values, its errors).
    private static func read(_ cell: PostgresCell) throws -> UUID {
        try inPlace(cell, BinaryValue.uuid) ?? cell.decode(UUID.self)
    }
    private static func read(_ cell: PostgresCell) throws -> UUID? {
        try inPlace(cell, BinaryValue.uuid) ?? cell.decode(UUID?.self)
    }
    private static func read(_ cell: PostgresCell) throws -> String {
        try inPlace(cell, BinaryValue.string) ?? cell.decode(String.self)
    }
    private static func read(_ cell: PostgresCell) throws -> String? {
        try inPlace(cell, BinaryValue.string) ?? cell.decode(String?.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Int {
        try inPlace(cell, BinaryValue.integer) ?? cell.decode(Int.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Int? {
        try inPlace(cell, BinaryValue.integer) ?? cell.decode(Int?.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Bool {
        try inPlace(cell, BinaryValue.bool) ?? cell.decode(Bool.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Date {
        try inPlace(cell, BinaryValue.date) ?? cell.decode(Date.self)
    }
    private static func read(_ cell: PostgresCell) throws -> Date? {
        try inPlace(cell, BinaryValue.date) ?? cell.decode(Date?.self)
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
