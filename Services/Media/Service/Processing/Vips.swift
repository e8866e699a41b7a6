import CVipsShims
import Foundation

/// libvips through the fixed-signature shims of `CVipsShims` (Swift cannot call its variadic
/// functions). Every call here decodes or encodes pixels, so it runs on the kit's blocking pool,
/// never on Swift's cooperative threads; each ends with ``threadDone()`` so libvips frees the
/// thread's buffers.
package enum Vips {
    /// An image's header, read without decoding its pixels.
    package struct Header: Equatable {
        package var width: Int
        package var height: Int
        package var pages: Int
        /// EXIF orientation, 1–8 (1 when there is none).
        package var orientation: Int
        /// The libvips loader that recognised it (`VipsForeignLoadJpegBuffer`).
        package var loader: String

        /// Width and height as shown, after the orientation is applied (5–8 turn it a quarter).
        var shownSize: (width: Int, height: Int) { orientation >= 5 ? (height, width) : (width, height) }
    }

    enum Format: Int32 {
        case jpeg = 0
        case webp = 1
        case png = 2

        var contentType: String {
            switch self {
            case .jpeg: "image/jpeg"
            case .webp: "image/webp"
            case .png: "image/png"
            }
        }

        var fileExtension: String {
            switch self {
            case .jpeg: "jpg"
            case .webp: "webp"
            case .png: "png"
            }
        }

        var name: String {
            switch self {
            case .jpeg: "jpeg"
            case .webp: "webp"
            case .png: "png"
            }
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Starts libvips once per process: no operation cache, one thread per operation (the
    /// pool gives parallelism), untrusted loaders blocked, and only our formats' loaders open.
    static let started: Result<Void, Failure> = {
        orbit_vips_init("orbitcove-media") == 0 ? .success(()) : .failure(Failure(description: lastError()))
    }()

    package static func header(_ bytes: Data) throws -> Header {
        try started.get()
        var width: Int32 = 0
        var height: Int32 = 0
        var pages: Int32 = 0
        var orientation: Int32 = 0
        var loader = [CChar](repeating: 0, count: 128)
        let status = bytes.withUnsafeBytes { raw in
            orbit_vips_header(
                raw.baseAddress, raw.count, &width, &height, &pages, &orientation, &loader, loader.count)
        }
        guard status == 0 else { throw Failure(description: lastError()) }
        return Header(
            width: Int(width), height: Int(height), pages: Int(max(pages, 1)), orientation: Int(orientation),
            loader: String(decoding: loader.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The image at most `size` pixels wide and four times that high (never enlarged), turned
    /// upright, in sRGB, with no metadata.
    static func thumbnail(_ bytes: Data, size: Int, format: Format, quality: Int) throws -> Data {
        try started.get()
        return try output { out, length in
            bytes.withUnsafeBytes { raw in
                orbit_vips_thumbnail(
                    raw.baseAddress, raw.count, Int32(size), format.rawValue, Int32(quality), out, length)
            }
        }
    }

    /// The whole image, turned upright, in sRGB, with no metadata.
    static func original(_ bytes: Data, format: Format, quality: Int) throws -> Data {
        try started.get()
        return try output { out, length in
            bytes.withUnsafeBytes { raw in
                orbit_vips_original(raw.baseAddress, raw.count, format.rawValue, Int32(quality), out, length)
            }
        }
    }

    /// Frees what libvips keeps for the calling thread; call at the end of a job.
    static func threadDone() { orbit_vips_thread_shutdown() }

    /// Bytes of pixel memory libvips holds now (a gauge).
    static var trackedMemory: Int { Int(orbit_vips_tracked_mem()) }

    private static func output(
        _ call: (UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws -> Data {
        var pointer: UnsafeMutableRawPointer?
        var length = 0
        guard call(&pointer, &length) == 0, let pointer else { throw Failure(description: lastError()) }
        defer { orbit_vips_free(pointer) }
        return Data(bytes: pointer, count: length)
    }

    private static func lastError() -> String {
        var text = [CChar](repeating: 0, count: 512)
        orbit_vips_last_error(&text, text.count)
        let message =
            String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(separator: "\n").first.map(String.init) ?? ""
        return message.isEmpty ? "libvips failed" : message
    }
}
