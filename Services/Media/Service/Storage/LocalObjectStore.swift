import Crypto
import Foundation
import OrbitCoveInfra

/// Files in a directory of this machine (the choice for `make up` and one-machine installs).
/// Clients reach them through the gateway at `/api/v1/media/files/…` (``LocalFileRoutes``),
/// with URLs this store signs (HMAC-SHA256 with a key every instance shares), so they behave
/// as S3's presigned URLs do: a `PUT` bound to its length, type and SHA-256 until it expires,
/// a `GET` bound to its type until it expires.
package struct LocalObjectStore: ObjectStore {
    let root: URL
    let key: SymmetricKey
    /// The gateway's address, which the signed URLs start with.
    let publicURL: String
    let blocking: BlockingPool

    package init(directory: String, signingKey: String, publicURL: String, blocking: BlockingPool) {
        root = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        key = SymmetricKey(data: Data(signingKey.utf8))
        self.publicURL = publicURL
        self.blocking = blocking
    }

    /// The file behind `key`, for a key the server could have chosen.
    func file(_ key: String) throws -> URL {
        guard MediaKeys.isValid(key) else {
            throw ObjectStoreError.failed(operation: "path", status: 400, message: key)
        }
        return root.appendingPathComponent(key, isDirectory: false)
    }

    package func put(key: String, body: Data, contentType: String) async throws {
        let file = try file(key)
        try await blocking.run {
            let folder = file.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // Written beside, then renamed: a reader sees the old file or the new, never half.
            let partial = folder.appendingPathComponent(".\(UUID().uuidString).partial")
            try body.write(to: partial)
            guard rename(partial.path, file.path) == 0 else {
                let code = errno
                try? FileManager.default.removeItem(at: partial)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
    }

    package func get(key: String, maxBytes: Int) async throws -> Data? {
        let file = try file(key)
        return try await blocking.run {
            guard let size = Self.size(of: file) else { return nil }
            guard size <= maxBytes else { throw ObjectStoreError.tooLarge }
            return try Data(contentsOf: file)
        }
    }

    package func head(key: String) async throws -> StoredObject? {
        let file = try file(key)
        return try await blocking.run {
            guard let size = Self.size(of: file), let handle = try? FileHandle(forReadingFrom: file) else { return nil }
            defer { try? handle.close() }
            var hash = SHA256()
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hash.update(data: chunk) }
            return StoredObject(size: size, sha256: Data(hash.finalize()))
        }
    }

    package func delete(key: String) async throws {
        let file = try file(key)
        try await blocking.run {
            do {
                try FileManager.default.removeItem(at: file)
            } catch CocoaError.fileNoSuchFile {
                return
            }
            // An emptied `variants/<id>` folder goes too: rmdir(2) refuses a folder that is not
            // empty, so a rendition written meanwhile stays. `uploads/` itself is never removed.
            if key.hasPrefix("variants/") { rmdir(file.deletingLastPathComponent().path) }
        }
    }

    package func uploadRequest(
        key: String, contentType: String, size: Int, sha256: Data, expires: Date
    ) throws
        -> SignedRequest
    {
        _ = try file(key)
        let expiry = Int(expires.timeIntervalSince1970)
        let checksum = sha256.base64EncodedString()
        let signature = sign(
            Self.uploadFacts(key: key, expires: expiry, type: contentType, size: size, sha256: checksum))
        return SignedRequest(
            method: "PUT", url: "\(publicURL)/api/v1/media/files/\(key)?expires=\(expiry)&signature=\(signature)",
            headers: ["Content-Type": contentType, "Content-Length": String(size), Self.checksumHeader: checksum])
    }

    package func downloadURL(key: String, contentType: String, expires: Date) throws -> String {
        _ = try file(key)
        let expiry = Int(expires.timeIntervalSince1970)
        let type = contentType.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let signature = sign(Self.downloadFacts(key: key, expires: expiry, type: contentType))
        return "\(publicURL)/api/v1/media/files/\(key)?expires=\(expiry)&type=\(type)&signature=\(signature)"
    }

    /// The header carrying the body's SHA-256 (base64), named as S3 names it so a client sends
    /// the same headers to either store.
    package static let checksumHeader = "x-amz-checksum-sha256"

    static func uploadFacts(key: String, expires: Int, type: String, size: Int, sha256: String) -> String {
        "PUT\n\(key)\n\(expires)\n\(type)\n\(size)\n\(sha256)"
    }

    static func downloadFacts(key: String, expires: Int, type: String) -> String {
        "GET\n\(key)\n\(expires)\n\(type)"
    }

    func sign(_ facts: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(facts.utf8), using: key).lowerHex
    }

    /// Whether `signature` was made by this store for `facts` (compared in constant time).
    func verify(_ facts: String, signature: String) -> Bool {
        guard let given = Data(hex: signature) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Data(facts.utf8), using: key)
    }

    private static func size(of file: URL) -> Int? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
            (attributes[.type] as? FileAttributeType) == .typeRegular
        else { return nil }
        return (attributes[.size] as? NSNumber)?.intValue
    }
}
