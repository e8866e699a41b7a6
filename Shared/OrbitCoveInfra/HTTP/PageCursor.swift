import Foundation

/// A keyset position `(createdAt, id)` in a newest-first list, opaque to clients.
package struct PageCursor: Sendable, Equatable {
    package var createdAt: Date
    package var id: UUID

    package static let defaultLimit = 20
    package static let maxLimit = 100

    package init(createdAt: Date, id: UUID) {
        self.createdAt = createdAt
        self.id = id
    }

    package init(token: String) throws {
        guard let data = Data(base64URLEncoded: token), let text = String(data: data, encoding: .utf8) else {
            throw APIError.validation(["cursor": "is not a cursor this API issued"])
        }
        let parts = text.split(separator: "|")
        guard parts.count == 2, let micros = Int64(parts[0]), let id = UUID(uuidString: String(parts[1])) else {
            throw APIError.validation(["cursor": "is not a cursor this API issued"])
        }
        self.createdAt = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        self.id = id
    }

    /// Microseconds, as PostgreSQL stores timestamps, so the position is exact.
    package var token: String {
        let micros = Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded())
        return Data("\(micros)|\(id.uuidString.lowercased())".utf8).base64URLEncodedString()
    }

    package static func limit(from text: String?) throws -> Int {
        guard let text else { return defaultLimit }
        guard let value = Int(text), (1...maxLimit).contains(value) else {
            throw APIError.validation(["limit": "must be between 1 and \(maxLimit)"])
        }
        return value
    }
}
