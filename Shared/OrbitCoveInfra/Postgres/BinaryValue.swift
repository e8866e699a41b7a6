import Foundation
import PostgresNIO

/// The binary forms of `uuid`, `int2`/`int4`/`int8` (as an `Int`), `timestamptz`, `bool`,
/// `text` and `varchar`, read from a value's bytes to the values PostgresNIO makes of them
/// (`RowReaderTests` and `RecordReaderTests` compare them). Each is nil when the type or the
/// length is not its own. They read raw bytes, not a `ByteBuffer`: each of the buffer's reads
/// checks its bounds and its storage's exclusive access again, which was most of reading a
/// window's thousand records.
enum BinaryValue {
    /// How a value of one type is read: its type, and exactly its bytes.
    typealias Read<Value> = (PostgresDataType, UnsafeRawBufferPointer) -> Value?

    /// PostgreSQL's epoch, as the driver counts `timestamptz` from it.
    private static let postgresEpoch = Date(timeIntervalSince1970: 946_684_800)

    static func uuid(_ type: PostgresDataType, _ bytes: UnsafeRawBufferPointer) -> UUID? {
        guard type == .uuid, bytes.count == 16 else { return nil }
        return UUID(uuid: bytes.loadUnaligned(as: uuid_t.self))
    }

    static func integer(_ type: PostgresDataType, _ bytes: UnsafeRawBufferPointer) -> Int? {
        switch (type, bytes.count) {
        case (.int8, 8): return Int(bigEndian(bytes, as: Int64.self))
        case (.int4, 4): return Int(bigEndian(bytes, as: Int32.self))
        case (.int2, 2): return Int(bigEndian(bytes, as: Int16.self))
        default: return nil
        }
    }

    /// Microseconds from PostgreSQL's epoch, made a date by the driver's own arithmetic (so the
    /// same bits: dates read here are compared with dates the driver read).
    static func date(_ type: PostgresDataType, _ bytes: UnsafeRawBufferPointer) -> Date? {
        guard type == .timestamptz, bytes.count == 8 else { return nil }
        let microseconds = bigEndian(bytes, as: Int64.self)
        return Date(timeInterval: Double(microseconds) / Double(1_000_000), since: postgresEpoch)
    }

    static func bool(_ type: PostgresDataType, _ bytes: UnsafeRawBufferPointer) -> Bool? {
        guard type == .bool, bytes.count == 1 else { return nil }
        switch bytes[0] {
        case 0: return false
        case 1: return true
        default: return nil
        }
    }

    /// As the driver reads text: UTF-8, an invalid sequence replaced (PostgreSQL sends none).
    static func string(_ type: PostgresDataType, _ bytes: UnsafeRawBufferPointer) -> String? {
        guard type == .text || type == .varchar else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The big-endian integer at `offset` in `bytes`, which holds at least its size from there.
    static func bigEndian<Integer: FixedWidthInteger>(
        _ bytes: UnsafeRawBufferPointer, at offset: Int = 0, as: Integer.Type
    ) -> Integer {
        Integer(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Integer.self))
    }
}
