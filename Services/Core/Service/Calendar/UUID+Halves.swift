import Foundation

extension UUID {
    /// The 16 bytes as two big-endian halves: compared in order, they order ids as their text
    /// does, and as PostgreSQL orders uuids (byte by byte), without making the text.
    var halves: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid) { bytes in
            (
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }
}
