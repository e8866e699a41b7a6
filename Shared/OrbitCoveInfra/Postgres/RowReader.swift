import Foundation
import PostgresNIO

/// Reads a row's cells in order, for reads of thousands of rows. `decode((A, B, …).self)` looks
/// up the tuple's type metadata on every row, and `makeRandomAccess()` copies the columns
/// first; in a calendar window read (about 3,000 rows) those were a quarter of the service's
/// time. Each `next()` decodes one concrete type, chosen by what the result is assigned to, as
/// PostgresNIO decodes it (an SQL `NULL` is nil for an optional and an error otherwise).
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

    package mutating func next() throws -> UUID { try cell().decode(UUID.self) }
    package mutating func next() throws -> UUID? { try cell().decode(UUID?.self) }
    package mutating func next() throws -> String { try cell().decode(String.self) }
    package mutating func next() throws -> String? { try cell().decode(String?.self) }
    package mutating func next() throws -> Int { try cell().decode(Int.self) }
    package mutating func next() throws -> Int? { try cell().decode(Int?.self) }
    package mutating func next() throws -> Double? { try cell().decode(Double?.self) }
    package mutating func next() throws -> Bool { try cell().decode(Bool.self) }
    package mutating func next() throws -> Date { try cell().decode(Date.self) }
    package mutating func next() throws -> Date? { try cell().decode(Date?.self) }
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
        let cell = try cell()
        guard cell.columnName == column else {
            throw RowReaderError.unexpectedColumn(expected: column, found: cell.columnName)
        }
        return try cell.decode(Value.self)
    }
}
