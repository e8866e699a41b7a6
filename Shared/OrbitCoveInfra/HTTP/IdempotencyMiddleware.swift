import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import OrbitCoveModels
import PostgresNIO

/// `Idempotency-Key` on POST: the first request with a key runs and its response is kept for
/// a day; a retry with the same key and body gets that response again (with
/// `Idempotent-Replayed: true`) instead of a second effect; the same key with another body is
/// `422 IDEMPOTENCY_KEY_REUSED`, and a retry while the first is still running is
/// `409 IDEMPOTENCY_IN_PROGRESS`. Keys belong to the signed-in user; anonymous POSTs pass
/// untouched.
///
/// A request's writes are never made twice, except for a response that carries a secret (a
/// calendar feed's address, an upload URL), which is not kept and whose retry makes a new one. Every
/// transaction of the request that holds a key marks the key applied as it commits
/// (``IdempotencyClaim``, migration 0052; a statement that is its own transaction marks it
/// itself, `Database.committingStatement`). So:
/// - a server error, rate limiting or another refusal that says to try again (`Retry-After`)
///   that wrote nothing is not kept, and the retry runs;
/// - one that wrote (a failure after the commit) is kept as applied without a response, as is
///   a response the database could not keep: a retry hears `409 IDEMPOTENCY_RESPONSE_LOST`
///   and reads the result instead of writing it again;
/// - a holder that never answers (its process died) gives its key up after two minutes if it
///   had written nothing, and a late commit of that holder then fails instead of writing
///   beside the retry that took over.
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
        // Two fields would be read as one key, "k1, k2": a retry sending one of them would be
        // a new request. (A proxy that joined them into one field first is not told apart.)
        guard request.headers[values: .idempotencyKey].count == 1 else {
            throw APIError.validation(["Idempotency-Key": "must be given once"])
        }
        guard (1...255).contains(key.utf8.count) else {
            throw APIError.validation(["Idempotency-Key": "must be 1 to 255 characters"])
        }
        var request = request
        let body = try await request.collectBody(upTo: context.maxUploadSize)
        let hash = Self.hash(request, body: body)

        let holder = IdempotencyClaim(userId: userId, key: key)
        let earlier: Stored?
        do {
            earlier = try await claim(holder, hash: hash)
        } catch let error as APIError where error.code == Self.reused.code {
            // A key kept before JSON bodies were compared as values (2026-12-01; keys last a
            // day) holds the hash of the bytes as sent: a retry of those bytes is that request.
            let asSent = Self.hash(request.method, request.uri.path, Data(buffer: body))
            guard asSent != hash else { throw error }
            earlier = try await claim(holder, hash: asSent)
        }
        if let earlier { return try earlier.response() }
        let response: Response
        do {
            response = try await IdempotencyClaim.$current.withValue(holder) { try await next(request, context) }
        } catch let error as APIError {
            let response = try error.response(from: request, context: context)
            return try await settle(response, holder)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == IdempotencyClaim.takenOver {
            // A retry took the key over while this request ran; its transaction rolled back.
            throw Self.inProgress
        } catch {
            try? await release(holder, keepIfApplied: true)
            throw error
        }
        return try await settle(response, holder)
    }

    /// What makes two requests with one key the same request: the method, the path and the
    /// body. A body read as JSON (declared so, not compressed) counts as the value it holds,
    /// written one way (``JSONCoding/encoder``: keys sorted, no spaces, one escape and one
    /// number form), so a client that encodes its request again before retrying (an offline
    /// queue after a restart, keys in another order) retries the same request; any other body
    /// counts as its bytes. (A JSON body already written that way counts as its bytes did
    /// before: keys kept across a deployment still match.)
    /// Numbers are compared as the `Double`s they decode to, as every route that takes a key
    /// reads them (`FieldReader`): `9007199254740993` and `9007199254740992` are one request.
    static func hash(_ request: Request, body: ByteBuffer) -> String {
        let bytes = Data(buffer: body)
        if Request.declaresJSON(request.headers[.contentType]),
            Request.isUncoded(request.headers[values: .contentEncoding]), StrictJSON.problem(in: bytes) == nil,
            let value = try? JSONCoding.decoder.decode(JSONValue.self, from: bytes),
            let written = try? JSONCoding.encoder.encodeBytes(value)
        {
            return hash(request.method, request.uri.path, Data(written))
        }
        return hash(request.method, request.uri.path, bytes)
    }

    /// The method, the path and `body` as they are.
    static func hash(_ method: HTTPRequest.Method, _ path: String, _ body: Data) -> String {
        var hasher = SHA256()
        hasher.update(data: Data("\(method.rawValue) \(path)\n".utf8))
        hasher.update(data: body)
        return hasher.finalize().lowerHex
    }

    static let reused = APIError(
        .unprocessableContent, code: "IDEMPOTENCY_KEY_REUSED",
        message: "This Idempotency-Key was used with a different request")

    static let inProgress = APIError(
        .conflict, code: "IDEMPOTENCY_IN_PROGRESS",
        message: "A request with this Idempotency-Key is still being processed; retry shortly")
    static let responseLost = APIError(
        .conflict, code: "IDEMPOTENCY_RESPONSE_LOST",
        message: "The request with this Idempotency-Key was applied, but its response was lost; read the result instead"
    )

    /// What a key already holds, or `nil` when `holder` now owns it. One statement
    /// (`app_idempotency_claim`, migration 0056): it enters as the key's owner, claims the key,
    /// or reads what it holds, waiting for a holder committing right now and then seeing its
    /// writes applied; a key released between the insert and the read is claimed again.
    private func claim(_ holder: IdempotencyClaim, hash: String) async throws -> Stored? {
        try await database.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT outcome, status_code, content_type, location, body
                FROM app_idempotency_claim(\(holder.userId), \(holder.key), \(hash), \(holder.id))
                """, logger: logger)
            for try await row in rows {
                var cells = RowReader(row)
                let outcome: String = try cells.next("outcome")
                let status: Int? = try cells.next("status_code")
                let contentType: String? = try cells.next("content_type")
                let location: String? = try cells.next("location")
                let body: ByteBuffer? = try cells.next("body")
                switch outcome {
                case "owned": return nil
                case "held":
                    guard let status else { throw Self.inProgress }
                    return Stored(status: status, contentType: contentType, location: location, body: body)
                case "reused": throw Self.reused
                case "lost": throw Self.responseLost
                default: throw Self.inProgress
                }
            }
            throw Self.inProgress
        }
    }

    /// Keeps the final response of a request that owned the key, and returns it.
    private func settle(_ response: Response, _ holder: IdempotencyClaim) async throws -> Response {
        let status = response.status.code
        // A response that must not be stored (it carries a secret, like a calendar feed's
        // address or an upload URL) is not kept either: a retry makes a new one.
        if response.headers[.cacheControl]?.contains("no-store") == true {
            try? await release(holder, keepIfApplied: false)
            return response
        }
        // Nor is a refusal of how the request was sent (415: its content type or coding), which
        // wrote nothing: the retry that sends it right is the request (hostile probe 14); nor one
        // that says to try again (`Retry-After`: an answer the event's edits kept overtaking,
        // `409 EVENT_CHANGING`), which its retry may not meet.
        guard status < 500, status != 429, status != 415, response.headers[.retryAfter] == nil else {
            try? await release(holder, keepIfApplied: true)
            return response
        }
        let collected = NIOLockedValueBox(ByteBuffer())
        try await response.body.write(CollectingWriter(collected: collected))
        let body = collected.withLockedValue { $0 }
        var copy = response
        copy.body = .init(byteBuffer: body)
        do {
            try await database.withConnection { connection in
                try await connection.run(
                    """
                    SELECT app_idempotency_keep(
                        \(holder.userId), \(holder.key), \(holder.id), \(Int32(status)), \(response.headers[.contentType]),
                        \(response.headers[.location]), \(body))
                    """, logger: logger)
            }
        } catch {
            // The request happened; only its replay is lost (a retry hears so, or runs again if
            // nothing was written). The client gets its answer.
            logger.warning("idempotent response not kept", metadata: ["error": .string(logDescription(of: error))])
            try? await release(holder, keepIfApplied: true)
        }
        return copy
    }

    /// Gives the key up after a response that is not kept: deleted, so that a retry runs, unless
    /// `keepIfApplied` and the request's writes committed, in which case it is kept as applied
    /// with no response, so that a retry hears so. The database decides, not `holder.applied`:
    /// a commit whose acknowledgement was lost is applied all the same. One statement
    /// (`app_idempotency_release`, migration 0056).
    private func release(_ holder: IdempotencyClaim, keepIfApplied: Bool) async throws {
        try await database.withConnection { connection in
            try await connection.run(
                """
                SELECT app_idempotency_release(\(holder.userId), \(holder.key), \(holder.id), \(keepIfApplied))
                """, logger: logger)
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

/// The request that holds an `Idempotency-Key`, while it runs: every ``Database`` transaction
/// of the request marks the key applied just before it commits if it wrote anything
/// (`app_idempotency_applied`; a statement that is its own transaction marks it before it
/// writes, `Database.committingStatement`), and fails instead if a retry has taken the key over
/// (a key released or expired refuses nothing).
package final class IdempotencyClaim: Sendable {
    @TaskLocal package static var current: IdempotencyClaim?
    /// The SQLSTATE `app_idempotency_applied` fails with when the key is no longer this claim's.
    static let takenOver = "OCI01"

    let userId: UUID
    let key: String
    let id = UUID()
    private let wrote = AtomicFlag()

    init(userId: UUID, key: String) {
        self.userId = userId
        self.key = key
    }

    /// Whether a transaction of the request wrote and committed.
    var applied: Bool { wrote.isSet }

    /// Marks the key applied if the transaction on `connection` wrote anything; whether it did.
    func mark(on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT app_idempotency_applied(\(userId), \(key), \(id))", logger: logger)
        for try await wrote in rows.decode(Bool.self) { return wrote }
        return false
    }

    /// Called once a transaction that marked the key has committed.
    func committed() { wrote.set() }
}

// swift-format-ignore: NeverForceUnwrap
// The names are valid header tokens, so the failable initialiser cannot fail.
extension HTTPField.Name {
    package static let idempotentReplayed = Self("Idempotent-Replayed")!
}
