import Foundation

/// Where media bytes live: the local filesystem by default (`make up`), S3-compatible storage
/// in production. Keys are chosen by the server (`MediaKeys`), never by a client.
///
/// Clients never send bytes through a service's handler for S3: they `PUT` to a signed URL
/// bound to the declared size, type and SHA-256, and read through a signed `GET` URL valid
/// for minutes. The worker reads and writes through the store itself.
package protocol ObjectStore: Sendable {
    /// Stores `body` at `key`, replacing what was there.
    func put(key: String, body: Data, contentType: String) async throws
    /// The object's bytes, or `nil` when there is none. More than `maxBytes` throws
    /// ``ObjectStoreError/tooLarge``.
    func get(key: String, maxBytes: Int) async throws -> Data?
    /// The object's size and SHA-256 (when the store knows it), or `nil` when there is none.
    func head(key: String) async throws -> StoredObject?
    /// Removes the object; removing what is not there succeeds.
    func delete(key: String) async throws
    /// A `PUT` a client may send once, before `expires`, with exactly these headers: the
    /// store refuses another length, type or checksum.
    func uploadRequest(
        key: String, contentType: String, size: Int, sha256: Data, expires: Date
    ) throws
        -> SignedRequest
    /// A `GET` of the object valid until `expires`, answered with `contentType`.
    func downloadURL(key: String, contentType: String, expires: Date) throws -> String
}

/// A request a client sends as it is: method, absolute URL and the headers that were signed.
package struct SignedRequest: Sendable, Equatable {
    package var method: String
    package var url: String
    package var headers: [String: String]

    package init(method: String, url: String, headers: [String: String]) {
        self.method = method
        self.url = url
        self.headers = headers
    }
}

/// What a store says about an object without reading it.
package struct StoredObject: Sendable, Equatable {
    package var size: Int
    /// The SHA-256 of the bytes, when the store checked or recorded it.
    package var sha256: Data?

    package init(size: Int, sha256: Data?) {
        self.size = size
        self.sha256 = sha256
    }
}

package enum ObjectStoreError: Error, Equatable, CustomStringConvertible {
    /// The object is larger than the caller would read.
    case tooLarge
    /// The store answered something other than success: its status and the start of its body.
    case failed(operation: String, status: Int, message: String)

    package var description: String {
        switch self {
        case .tooLarge: "the object is larger than allowed"
        case .failed(let operation, let status, let message): "\(operation) answered \(status): \(message)"
        }
    }
}
