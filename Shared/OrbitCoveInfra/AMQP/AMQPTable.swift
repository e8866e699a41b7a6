import CRabbitMQ
import Foundation

/// A value in an AMQP field table (queue arguments, message headers).
package enum AMQPFieldValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case bool(Bool)
}

/// Owns the C memory behind an `amqp_table_t` for as long as a call needs it.
final class AMQPTableStorage {
    private var entries: UnsafeMutablePointer<amqp_table_entry_t>?
    private var strings: [UnsafeMutablePointer<CChar>] = []
    let count: Int

    init(_ fields: [(String, AMQPFieldValue)]) {
        count = fields.count
        guard !fields.isEmpty else { return }
        let entries = UnsafeMutablePointer<amqp_table_entry_t>.allocate(capacity: fields.count)
        for (index, (key, value)) in fields.enumerated() {
            var entry = amqp_table_entry_t()
            entry.key = bytes(key)
            switch value {
            case .string(let text):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
                entry.value.value.bytes = bytes(text)
            case .int(let number):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_I64.rawValue)
                entry.value.value.i64 = number
            case .bool(let flag):
                entry.value.kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue)
                entry.value.value.boolean = flag ? 1 : 0
            }
            (entries + index).initialize(to: entry)
        }
        self.entries = entries
    }

    var table: amqp_table_t { amqp_table_t(num_entries: Int32(count), entries: entries) }

    /// Bytes that stay valid until this storage is released.
    func bytes(_ text: String) -> amqp_bytes_t {
        guard let copy = strdup(text) else { fatalError("out of memory copying an AMQP table string") }
        strings.append(copy)
        return amqp_bytes_t(len: strlen(copy), bytes: UnsafeMutableRawPointer(copy))
    }

    deinit {
        entries?.deallocate()
        for string in strings { free(string) }
    }
}

extension amqp_bytes_t {
    var string: String? {
        guard let bytes, len > 0 else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: len), as: UTF8.self)
    }

    var array: [UInt8] {
        guard let bytes, len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: len))
    }
}

extension amqp_table_t {
    /// String and integer headers; nested tables and arrays (`x-death`) are left out.
    var simpleValues: [String: AMQPFieldValue] {
        var result: [String: AMQPFieldValue] = [:]
        guard let entries, num_entries > 0 else { return result }
        for index in 0..<Int(num_entries) {
            let entry = entries[index]
            guard let key = entry.key.string else { continue }
            let value = entry.value
            switch Int(value.kind) {
            case Int(AMQP_FIELD_KIND_UTF8.rawValue), Int(AMQP_FIELD_KIND_BYTES.rawValue):
                result[key] = .string(value.value.bytes.string ?? "")
            case Int(AMQP_FIELD_KIND_I64.rawValue): result[key] = .int(value.value.i64)
            case Int(AMQP_FIELD_KIND_U64.rawValue): result[key] = .int(Int64(bitPattern: value.value.u64))
            case Int(AMQP_FIELD_KIND_I32.rawValue): result[key] = .int(Int64(value.value.i32))
            case Int(AMQP_FIELD_KIND_U32.rawValue): result[key] = .int(Int64(value.value.u32))
            case Int(AMQP_FIELD_KIND_I16.rawValue): result[key] = .int(Int64(value.value.i16))
            case Int(AMQP_FIELD_KIND_I8.rawValue): result[key] = .int(Int64(value.value.i8))
            case Int(AMQP_FIELD_KIND_BOOLEAN.rawValue): result[key] = .bool(value.value.boolean != 0)
            default: continue
            }
        }
        return result
    }
}
