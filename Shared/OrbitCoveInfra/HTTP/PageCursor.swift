import Foundation
import Hummingbird
import NIOCore
import OrbitCoveModels
import PostgresNIO

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

/// A page position's time as PostgreSQL stores it, to the microsecond. `Date`'s own encoding
/// truncates a `Double` and can land a microsecond early, which would make a page repeat the
/// last row of the one before.
package struct ExactTimestamp: PostgresEncodable, Sendable {
    let microsecondsSince2000: Int64

    package static var psqlType: PostgresDataType { .timestamptz }
    package static var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(microsecondsSince2000)
    }

    /// For the branch of a query that no cursor takes.
    package static let unused = ExactTimestamp(microsecondsSince2000: 0)
}

extension PageCursor {
    package var exactCreatedAt: ExactTimestamp {
        let micros = Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded())
        return ExactTimestamp(microsecondsSince2000: micros - 946_684_800_000_000)
    }
}

/// The `cursor` and `limit` of a list request.
package struct PageRequest: Sendable {
    package var cursor: PageCursor?
    package var limit: Int

    package init(_ request: Request) throws {
        let query = request.uri.queryParameters
        limit = try PageCursor.limit(from: query.get("limit"))
        cursor = try query.get("cursor").map(PageCursor.init(token:))
    }

    /// What to ask the database for: one row more than the page, which only says there is more.
    package var fetchLimit: Int { limit + 1 }
}

extension Response {
    /// A page from up to ``PageRequest/fetchLimit`` rows, each with its position.
    package static func page<Item: Encodable & Sendable>(
        _ rows: [(Item, PageCursor)], of page: PageRequest, requestId: String
    ) throws -> Response {
        let items = rows.prefix(page.limit)
        let hasMore = rows.count > page.limit
        return try Response.json(
            ListEnvelope(
                data: items.map(\.0), meta: ResponseMeta(requestId: requestId),
                pagination: CursorPagination(
                    nextCursor: hasMore ? items.last?.1.token : nil, hasMore: hasMore, limit: page.limit)))
    }
}
