import Foundation
import Hummingbird
import NIOCore
import OrbitCoveModels
import PostgresNIO

/// A keyset position `(createdAt, id)` in a list, opaque to clients. The time is kept in
/// microseconds since 1970, as PostgreSQL stores it, so the position is exact and a cursor
/// from a client never goes through floating point on its way back to the database.
package struct PageCursor: Sendable, Equatable {
    package var microseconds: Int64
    package var id: UUID

    package static let defaultLimit = 20
    package static let maxLimit = 100

    /// Years 1 to 9999: every time this API writes, and far inside what PostgreSQL and
    /// `Date` can hold, so no arithmetic on an accepted cursor can overflow.
    static let validMicroseconds: ClosedRange<Int64> = -62_135_596_800_000_000...253_402_300_799_999_999

    package init(createdAt: Date, id: UUID) {
        let micros = ExactTimestamp.microsecondsSince1970(createdAt)
        self.microseconds = min(max(micros, Self.validMicroseconds.lowerBound), Self.validMicroseconds.upperBound)
        self.id = id
    }

    package init(token: String) throws {
        let invalid = APIError.validation(["cursor": "is not a cursor this API issued"])
        let parts = try OpaqueToken.parts(of: token, maxLength: 200, orThrow: invalid)
        guard parts.count == 2, let micros = Int64(parts[0]), Self.validMicroseconds.contains(micros),
            let id = UUID(uuidString: String(parts[1]))
        else { throw invalid }
        self.microseconds = micros
        self.id = id
    }

    package var createdAt: Date { Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }

    package var token: String {
        OpaqueToken.make([String(microseconds), id.lowercasedString])
    }

    package static func limit(from text: String?) throws -> Int {
        guard let text else { return defaultLimit }
        guard let value = Int(text), (1...maxLimit).contains(value) else {
            throw APIError.validation(["limit": "must be a whole number from 1 to \(maxLimit)"])
        }
        return value
    }
}

extension PageCursor {
    /// Cannot overflow: ``validMicroseconds`` keeps the value far from Int64's ends.
    package var exactCreatedAt: ExactTimestamp {
        ExactTimestamp(microsecondsSince2000: microseconds - 946_684_800_000_000)
    }
}

/// The `cursor` and `limit` of a list request.
package struct PageRequest: Sendable {
    package var cursor: PageCursor?
    package var limit: Int

    package init(cursor: PageCursor?, limit: Int) {
        self.cursor = cursor
        self.limit = limit
    }

    package init(_ request: Request) throws {
        let query = request.uri.queryParameters
        limit = try PageCursor.limit(from: query.get("limit"))
        cursor = try query.get("cursor").map(PageCursor.init(token:))
    }

    /// What to ask the database for: one row more than the page, which only says there is more.
    package var fetchLimit: Int { limit + 1 }
}

/// A page of a list with its items already written as JSON: what ``Response/page(_:requestId:)``
/// answers with, and what a cache keeps, so a cached page goes out without its items being
/// decoded and written again.
package struct EncodedPage: Sendable {
    /// The page's items, a JSON array.
    package var items: RawJSON
    package var pagination: CursorPagination

    /// The page of up to ``PageRequest/fetchLimit`` rows, each with its position.
    package init<Item: Encodable>(_ rows: [(Item, PageCursor)], of page: PageRequest) throws {
        let items = rows.prefix(page.limit)
        let hasMore = rows.count > page.limit
        self.items = RawJSON(bytes: try JSONCoding.encoder.encodeBytes(items.map(\.0)))
        self.pagination = CursorPagination(
            nextCursor: hasMore ? items.last?.1.token : nil, hasMore: hasMore, limit: page.limit)
    }

    /// The page as a cache stores it: `<limit> <next cursor, or nothing>`, a newline, the items.
    package var stored: String {
        "\(pagination.limit) \(pagination.nextCursor ?? "")\n" + String(decoding: items.bytes, as: UTF8.self)
    }

    /// A page ``stored`` wrote, or `nil` for anything else (then the cache missed).
    package init?(stored: String) {
        let text = stored.utf8
        guard let newline = text.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let header = text[..<newline].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard header.count == 2, let limit = Int(Substring(header[0])), (1...PageCursor.maxLimit).contains(limit)
        else { return nil }
        let cursor = String(Substring(header[1]))
        let items = Array(text[text.index(after: newline)...])
        guard items.first == UInt8(ascii: "["), items.last == UInt8(ascii: "]") else { return nil }
        self.items = RawJSON(bytes: items)
        self.pagination = CursorPagination(
            nextCursor: cursor.isEmpty ? nil : cursor, hasMore: !cursor.isEmpty, limit: limit)
    }
}

extension Response {
    /// A page from up to ``PageRequest/fetchLimit`` rows, each with its position.
    package static func page<Item: Encodable & Sendable>(
        _ rows: [(Item, PageCursor)], of page: PageRequest, requestId: String
    ) throws -> Response {
        try Response.page(EncodedPage(rows, of: page), requestId: requestId)
    }

    /// A page whose items are already JSON, in the list envelope.
    package static func page(_ page: EncodedPage, requestId: String) throws -> Response {
        let body = try envelope(page.items, meta: ResponseMeta(requestId: requestId), pagination: page.pagination)
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body))
    }
}

/// The tokens this API hands out (cursors, sync tokens): base64url text of `|`-separated parts.
package enum OpaqueToken {
    /// The parts of `token`, or `invalid` thrown if it is longer than `maxLength` or not
    /// base64url-encoded UTF-8.
    package static func parts(
        of token: String, maxLength: Int, orThrow invalid: APIError
    ) throws(APIError)
        -> [Substring]
    {
        guard token.utf8.count <= maxLength, let data = Data(base64URLEncoded: token),
            let text = String(data: data, encoding: .utf8)
        else { throw invalid }
        return text.split(separator: "|", omittingEmptySubsequences: false)
    }

    package static func make(_ parts: [String]) -> String {
        Data(parts.joined(separator: "|").utf8).base64URLEncodedString()
    }
}
