import Foundation

extension UUID {
    /// A random (version 4) UUID from the system's generator. Foundation's `UUID()` on Linux
    /// opens, reads and closes `/dev/urandom` for every id (seen with `strace` in the messaging
    /// benchmark: three system calls and a path lookup per message); this asks `getrandom` for
    /// the bits instead. Use it wherever the code makes an id.
    package static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}

extension UUID {
    /// The form this API writes everywhere (RFC 9562 prefers lower case); input accepts either.
    package var lowercasedString: String { uuidString.lowercased() }
}
