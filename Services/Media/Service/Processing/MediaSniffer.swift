import Foundation
import OrbitCoveModels

/// What a file is, from its first bytes rather than from what the client declared: the worker
/// processes a file only as the type its bytes say, and fails it when that differs from the
/// declared type.
enum MediaSniffer {
    /// The MIME type the bytes begin as, or `nil` for anything we do not accept.
    static func type(of bytes: Data) -> String? {
        let head = [UInt8](bytes.prefix(32))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + prefix.count && Array(head[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return MediaType.jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return MediaType.png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return MediaType.gif }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return MediaType.webp }
        if starts(Array("%PDF-".utf8)) { return MediaType.pdf }
        // ISO base media (HEIF): a first box `ftyp` whose major or compatible brands name HEIC.
        if starts(Array("ftyp".utf8), at: 4) {
            let boxSize = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            let box = [UInt8](bytes.prefix(min(max(boxSize, 0), 256)))
            var brands: [String] = []
            var offset = 8
            while offset + 4 <= box.count {
                if offset != 12 { brands.append(String(decoding: box[offset..<offset + 4], as: UTF8.self)) }
                offset += 4
            }
            if brands.contains(where: { ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains($0) }) {
                return MediaType.heic
            }
            if brands.contains(where: { ["mif1", "msf1"].contains($0) }) { return MediaType.heif }
        }
        return nil
    }

    /// Whether a file whose bytes are `sniffed` may be what the client declared as `declared`
    /// (HEIC and HEIF are one family: iPhones label either way).
    static func matches(declared: String, sniffed: String) -> Bool {
        let heif: Set = [MediaType.heic, MediaType.heif]
        return declared == sniffed || (heif.contains(declared) && heif.contains(sniffed))
    }
}
