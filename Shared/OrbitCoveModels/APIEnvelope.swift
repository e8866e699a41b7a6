import Foundation

/// `{"data": ..., "meta": {...}}`: the seed's success envelope.
package struct DataEnvelope<Payload: Encodable & Sendable>: Encodable, Sendable {
    package var data: Payload
    package var meta: ResponseMeta

    package init(data: Payload, meta: ResponseMeta) {
        self.data = data
        self.meta = meta
    }
}

/// A page of a cursor-paginated list.
package struct ListEnvelope<Item: Encodable & Sendable>: Encodable, Sendable {
    package var data: [Item]
    package var meta: ResponseMeta
    package var pagination: CursorPagination

    package init(data: [Item], meta: ResponseMeta, pagination: CursorPagination) {
        self.data = data
        self.meta = meta
        self.pagination = pagination
    }
}

package struct ResponseMeta: Codable, Sendable {
    package var timestamp: Date
    package var requestId: String?

    package init(timestamp: Date = Date(), requestId: String?) {
        self.timestamp = timestamp
        self.requestId = requestId
    }
}

package struct CursorPagination: Codable, Sendable {
    @ExplicitNull package var nextCursor: String?
    package var hasMore: Bool
    package var limit: Int

    package init(nextCursor: String?, hasMore: Bool, limit: Int) {
        self.nextCursor = nextCursor
        self.hasMore = hasMore
        self.limit = limit
    }
}

/// `{"error": {"code", "message", "details"}}`: the seed's error envelope.
package struct ErrorEnvelope: Codable, Sendable, Equatable {
    package struct Body: Codable, Sendable, Equatable {
        package var code: String
        package var message: String
        package var details: [String: JSONValue]
    }

    package var error: Body

    package init(code: String, message: String, details: [String: JSONValue] = [:]) {
        self.error = Body(code: code, message: message, details: details)
    }
}
