import Foundation
import Hummingbird
import OrbitCoveModels

/// One JSON configuration for requests, responses and messages: ISO 8601 dates, sorted keys.
package enum JSONCoding {
    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    package static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO 8601 date-time")
            }
            return date
        }
        return decoder
    }()

    /// `2026-01-04T12:00:00.000Z`: UTC with milliseconds.
    package static func formatTimestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// Accepts RFC 3339 date-times with or without fractional seconds.
    package static func parseTimestamp(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}

extension Request {
    /// Decodes a JSON body, turning a decoding failure into `VALIDATION_FAILED` naming the field.
    package func decodeJSON<Body: Decodable>(as type: Body.Type, context: some RequestContext) async throws -> Body {
        let buffer = try await body.collect(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else { throw APIError.badRequest("A JSON body is required") }
        do {
            return try JSONCoding.decoder.decode(Body.self, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            throw APIError.validation(Self.fieldErrors(error))
        }
    }

    private static func fieldErrors(_ error: DecodingError) -> [String: String] {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return [path(context.codingPath + [key]): "is required"]
        case .typeMismatch(let type, let context):
            return [path(context.codingPath).isEmpty ? "body" : path(context.codingPath): "must be \(type)"]
        case .valueNotFound(_, let context):
            return [path(context.codingPath): "must not be null"]
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            return [field.isEmpty ? "body" : field: field.isEmpty ? "is not valid JSON" : context.debugDescription]
        @unknown default:
            return ["body": "is not valid"]
        }
    }
}

extension Response {
    /// A JSON response in the seed's success envelope.
    package static func data<Payload: Encodable & Sendable>(
        _ payload: Payload, status: HTTPResponse.Status = .ok, requestId: String?, headers: HTTPFields = [:]
    ) throws -> Response {
        try json(
            DataEnvelope(data: payload, meta: ResponseMeta(requestId: requestId)), status: status, headers: headers)
    }

    package static func json<Body: Encodable>(
        _ body: Body, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        let bytes = try JSONCoding.encoder.encode(body)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
