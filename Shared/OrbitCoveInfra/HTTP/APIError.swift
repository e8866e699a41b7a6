import Foundation
import HTTPTypes
import Hummingbird
import OrbitCoveModels

/// An error a client may see: a status, a stable upper-snake code and a message, rendered in
/// the seed's error envelope. Anything else thrown by a handler becomes `INTERNAL_ERROR`.
package struct APIError: HTTPResponseError, CustomStringConvertible {
    package let status: HTTPResponse.Status
    package let code: String
    package let message: String
    package let details: [String: JSONValue]
    package var headers: HTTPFields

    package init(
        _ status: HTTPResponse.Status, code: String, message: String,
        details: [String: JSONValue] = [:], headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers
    }

    package var description: String { "\(status.code) \(code): \(message)" }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try envelope())))
    }

    /// The error envelope's bytes (`{"error":{…}}`).
    package func envelope() throws -> [UInt8] {
        try JSONCoding.encoder.encodeBytes(ErrorEnvelope(code: code, message: message, details: details))
    }
}

extension APIError {
    package static func validation(_ fields: [String: String]) -> APIError {
        APIError(
            .badRequest, code: "VALIDATION_FAILED", message: "The request is not valid",
            details: ["fields": .object(fields.mapValues { .string($0) })])
    }

    package static let unsupportedMediaType = APIError(
        .unsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", message: "Send the body as application/json, in UTF-8")

    /// A body sent with a content coding: none is decoded here, and the answer says which
    /// coding is taken (RFC 7694).
    package static let unsupportedContentCoding = APIError(
        .unsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE",
        message: "Send the body without a content coding (no Content-Encoding, or identity)",
        headers: [.acceptEncoding: "identity"])

    package static func badRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: "BAD_REQUEST", message: message)
    }

    package static func notFound(_ code: String = "NOT_FOUND", _ message: String = "No such resource") -> APIError {
        APIError(.notFound, code: code, message: message)
    }

    package static func unauthenticated(_ code: String = "UNAUTHENTICATED", _ message: String) -> APIError {
        APIError(.unauthorized, code: code, message: message, headers: [.wwwAuthenticate: "Bearer"])
    }

    /// The request's token outlived its account, deleted since it was issued.
    package static let accountDeleted = unauthenticated("ACCOUNT_DELETED", "This account has been deleted")

    package static let forbidden = APIError(.forbidden, code: "FORBIDDEN", message: "You may not do this")
    package static let internalError = APIError(
        .internalServerError, code: "INTERNAL_ERROR", message: "Something went wrong on our side")
    package static func unavailable(_ message: String) -> APIError {
        APIError(.serviceUnavailable, code: "SERVICE_UNAVAILABLE", message: message)
    }

    /// The stable code for a bare HTTP status, for errors raised by the framework itself.
    package static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "BAD_REQUEST"
        case 401: "UNAUTHENTICATED"
        case 403: "FORBIDDEN"
        case 404: "NOT_FOUND"
        case 405: "METHOD_NOT_ALLOWED"
        case 413: "PAYLOAD_TOO_LARGE"
        case 415: "UNSUPPORTED_MEDIA_TYPE"
        case 429: "RATE_LIMITED"
        case 503: "SERVICE_UNAVAILABLE"
        default: status.code >= 500 ? "INTERNAL_ERROR" : "BAD_REQUEST"
        }
    }
}
