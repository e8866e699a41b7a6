import Foundation
import PostgresNIO

/// The binary forms of `uuid`, `int2`/`int4`/`int8` (as an `Int`), `timestamptz`, `bool`,
/// `text` and `varchar`, read from `length` bytes at `index` to the values PostgresNIO makes
/// of them (`RowReaderTests` and `RecordReaderTests` compare them). Each is nil when the type or
/// the length is not its own.
enum BinaryValue {
    /// How a value of one type is read: its type, the bytes it is in, where it starts, how long.
    typealias Read<Value> = (PostgresDataType, ByteBuffer, _ at: Int, _ length: Int) -> Value?

    /// PostgreSQL's epoch, as the driver counts `timestamptz` from it.
    private static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    static func uuid(_ type: PostgresDataType, _ bytes: ByteBuffer, at index: Int, length: Int) -> UUID? {
        guard type == .uuid, length == 16, index >= bytes.readerIndex, index + 16 <= bytes.writerIndex else {
            return nil
        }
        return bytes.withUnsafeReadableBytes { all in
            UUID(uuid: all.loadUnaligned(fromByteOffset: index - bytes.readerIndex, as: uuid_t.self))
        }
    }

    static func integer(_ type: PostgresDataType, _ bytes: ByteBuffer, at index: Int, length: Int) -> Int? {
        switch (type, length) {
        case (.int8, 8): return bytes.getInteger(at: index, as: Int64.self).map(Int.init)
        case (.int4, 4): return bytes.getInteger(at: index, as: Int32.self).map(Int.init)
        case (.int2, 2): return bytes.getInteger(at: index, as: Int16.self).map(Int.init)
        default: return nil
        }
    }

    /// Microseconds from PostgreSQL's epoch, made a date by the driver's own arithmetic (so the
    /// same bits: dates read here are compared with dates the driver read).
    static func date(_ type: PostgresDataType, _ bytes: ByteBuffer, at index: Int, length: Int) -> Date? {
        guard type == .timestamptz, length == 8, let microseconds = bytes.getInteger(at: index, as: Int64.self)
        else { return nil }
        return Date(timeInterval: Double(microseconds) / Double(1_000_000), since: postgresEpoch)
    }

    static func bool(_ type: PostgresDataType, _ bytes: ByteBuffer, at index: Int, length: Int) -> Bool? {
        guard type == .bool, length == 1 else { return nil }
        switch bytes.getInteger(at: index, as: UInt8.self) {
        case 0: return false
        case 1: return true
        default: return nil
        }
    }

    static func string(_ type: PostgresDataType, _ bytes: ByteBuffer, at index: Int, length: Int) -> String? {
        guard type == .text || type == .varchar else { return nil }
        return bytes.getString(at: index, length: length)
    }
}
