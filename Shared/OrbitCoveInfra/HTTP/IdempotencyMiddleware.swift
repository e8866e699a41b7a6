import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// `Idempotency-Key` on POST: the first request with a key runs and its response is kept for
/// a day; a retry with the same key and body gets that response again (with
/// `Idempotent-Replayed: true`) instead of a second effect; the same key with another body is
/// `422 IDEMPOTENCY_KEY_REUSED`, and a retry while the first is still running is
/// `409 IDEMPOTENCY_IN_PROGRESS` (for up to two minutes: after that the first is taken to
/// have died, and the retry runs). Server errors and rate limiting are not kept, so the
/// client can try again. Keys belong to the signed-in user; anonymous POSTs pass untouched.
package struct IdempotencyMiddleware: RouterMiddleware {
    package typealias Context = AppRequestContext

    let database: Database
    let logger: Logger

    package init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard request.method == .post, let key = request.headers[HTTPField.Name.idempotencyKey],
            let userId = context.userId
        else {
            return try await next(request, context)
        }
        guard (1...255).contains(key.utf8.count) else {
            throw APIError.validation(["Idempotency-Key": "must be 1 to 255 characters"])
        }
        var request = request
        let body = try await request.collectBody(upTo: context.maxUploadSize)
        var hasher = SHA256()
        hasher.update(data: Data("\(request.method.rawValue) \(request.uri.path)\n".utf8))
        hasher.update(data: Data(buffer: body))
        let hash = hasher.finalize().lowerHex

        if let earlier = try await claim(key: key, userId: userId, hash: hash) {
            return try earlier.response()
        }
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            let response = try error.response(from: request, context: context)
            return try await settle(response, key: key, userId: userId)
        } catch {
            try? await forget(key: key, userId: userId)
            throw error
        }
        return try await settle(response, key: key, userId: userId)
    }

    /// What a key already holds, or `nil` when this request now owns it.
    private func claim(key: String, userId: UUID, hash: String) async throws -> Stored? {
        try await database.transaction(userId: userId) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO idempotency_keys (user_id, key, request_hash) VALUES (\(userId), \(key), \(hash))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger)
            for try await _ in inserted { return nil }
            let rows = try await connection.query(
                """
                SELECT request_hash, status_code, content_type, location, body,
                       created_at < NOW() - INTERVAL '2 minutes' AS abandoned
                FROM idempotency_keys
                WHERE user_id = \(userId) AND key = \(key)
                FOR UPDATE
                """, logger: logger)
            for try await row in rows {
                var cells = RowReader(row)
                let storedHash: String = try cells.next("request_hash")
                let status: Int? = try cells.next("status_code")
                let contentType: String? = try cells.next("content_type")
                let location: String? = try cells.next("location")
                let body: ByteBuffer? = try cells.next("body")
                let abandoned: Bool = try cells.next("abandoned")
                guard storedHash == hash else {
                    throw APIError(
                        .unprocessableContent, code: "IDEMPOTENCY_KEY_REUSED",
                        message: "This Idempotency-Key was used with a different request")
                }
                if status == nil, abandoned {
                    // The request that took the key never finished (its process died, say):
                    // this one takes over rather than the client being refused for a day.
                    try await connection.run(
                        """
                        UPDATE idempotency_keys SET request_hash = \(hash), created_at = NOW()
                        WHERE user_id = \(userId) AND key = \(key)
                        """, logger: logger)
                    return nil
                }
                guard let status else {
                    throw APIError(
                        .conflict, code: "IDEMPOTENCY_IN_PROGRESS",
                        message: "A request with this Idempotency-Key is still being processed; retry shortly")
                }
                return Stored(status: status, contentType: contentType, location: location, body: body)
            }
            // Expired and pruned between the two statements: run the request (rare, harmless).
            return nil
        }
    }

    /// Keeps the final response of a request that owned the key, and returns it.
    private func settle(_ response: Response, key: String, userId: UUID) async throws -> Response {
        let status = response.status.code
        // A response that must not be stored (it carries a secret, like a calendar feed's
        // address) is not kept either: a retry makes a new one.
        let secret = response.headers[.cacheControl]?.contains("no-store") == true
        guard status < 500, status != 429, !secret else {
            try? await forget(key: key, userId: userId)
            return response
        }
        let collected = NIOLockedValueBox(ByteBuffer())
        try await response.body.write(CollectingWriter(collected: collected))
        let body = collected.withLockedValue { $0 }
        try await database.transaction(userId: userId) { connection in
            try await connection.query(
                """
                UPDATE idempotency_keys
                SET status_code = \(status), content_type = \(response.headers[.contentType]),
                    location = \(response.headers[.location]), body = \(body), completed_at = NOW()
                WHERE user_id = \(userId) AND key = \(key)
                """, logger: logger)
        }
        var copy = response
        copy.body = .init(byteBuffer: body)
        return copy
    }

    private func forget(key: String, userId: UUID) async throws {
        try await database.transaction(userId: userId) { connection in
            try await connection.query(
                "DELETE FROM idempotency_keys WHERE user_id = \(userId) AND key = \(key)", logger: logger)
        }
    }

    private struct Stored {
        var status: Int
        var contentType: String?
        var location: String?
        var body: ByteBuffer?

        func response() throws -> Response {
            var headers: HTTPFields = [.idempotentReplayed: "true"]
            if let contentType { headers[.contentType] = contentType }
            if let location { headers[.location] = location }
            return Response(
                status: HTTPResponse.Status(code: status), headers: headers,
                body: .init(byteBuffer: body ?? ByteBuffer()))
        }
    }

    private struct CollectingWriter: ResponseBodyWriter {
        let collected: NIOLockedValueBox<ByteBuffer>

        mutating func write(_ buffer: ByteBuffer) async throws {
            _ = collected.withLockedValue { $0.writeImmutableBuffer(buffer) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

// swift-format-ignore: NeverForceUnwrap
// The names are valid header tokens, so the failable initialiser cannot fail.
extension HTTPField.Name {
    package static let idempotentReplayed = Self("Idempotent-Replayed")!
}
