import Foundation
import Hummingbird
import OrbitCoveModels

/// One JSON configuration for requests, responses and messages: ISO 8601 dates, sorted keys,
/// lower-case UUIDs.
package enum JSONCoding {
    /// Like a `JSONEncoder` with sorted keys, unescaped slashes and ``formatTimestamp(_:)`` for
    /// dates, but with UUIDs in lower case (RFC 9562), and 2.5 to 3.3 times as fast (BENCHMARKS.md,
    /// "JSON: our encoder beside JSONEncoder"); `JSONEncoderPropertyTests` holds the two equal.
    package static let encoder = OrbitJSONEncoder(formattingDatesWith: formatTimestamp)

    package static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an RFC 3339 date-time")
            }
            return date
        }
        return decoder
    }()

    /// `2026-01-04T12:00:00.000Z`: UTC with milliseconds (truncated, once made whole
    /// microseconds as PostgreSQL keeps them). Written by hand: every
    /// response carries timestamps, and Foundation's format styles cost tens of microseconds
    /// each on Linux, which showed in the core read benchmark.
    package static func formatTimestamp(_ date: Date) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        appendTimestamp(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``formatTimestamp(_:)``'s text, appended to `bytes` without making a String.
    package static func appendTimestamp(_ date: Date, to bytes: inout [UInt8]) {
        // To the microsecond first, as PostgreSQL keeps times (``ExactTimestamp``): a time read
        // back from it, say .186000, is a `Double` a hair under it, which truncated to the
        // millisecond was .185.
        let micros = ExactTimestamp.microsecondsSince1970(date)
        let millis = micros >= 0 ? micros / 1_000 : (micros - 999) / 1_000
        let (days, millisOfDay) = millis.quotientAndRemainder(dividingBy: 86_400_000)
        let (day, dayMillis) = millisOfDay < 0 ? (days - 1, millisOfDay + 86_400_000) : (days, millisOfDay)
        let (year, month, dayOfMonth) = civilDate(daysSince1970: day)
        // Written into 24 bytes on the stack, then appended at once (a window read writes
        // thousands of timestamps; byte-by-byte appends were most of their cost).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            var position = 0
            func put(_ byte: UInt8) {
                text[position] = byte
                position += 1
            }
            func digits(_ value: Int64, _ count: Int) {
                var divisor: Int64 = 1
                for _ in 1..<count { divisor *= 10 }
                var rest = value
                while divisor > 0 {
                    put(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
                    rest %= divisor
                    divisor /= 10
                }
            }
            digits(year, 4)
            put(UInt8(ascii: "-"))
            digits(month, 2)
            put(UInt8(ascii: "-"))
            digits(dayOfMonth, 2)
            put(UInt8(ascii: "T"))
            digits(dayMillis / 3_600_000, 2)
            put(UInt8(ascii: ":"))
            digits(dayMillis / 60_000 % 60, 2)
            put(UInt8(ascii: ":"))
            digits(dayMillis / 1000 % 60, 2)
            put(UInt8(ascii: "."))
            digits(dayMillis % 1000, 3)
            put(UInt8(ascii: "Z"))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<position]))
        }
    }

    /// Year, month and day of a day count from 1970-01-01 (proleptic Gregorian; Howard
    /// Hinnant's `civil_from_days`).
    static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = daysSince1970 + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysIn(month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Year, month and day to a day count from 1970-01-01 (proleptic Gregorian; Howard
    /// Hinnant's `days_from_civil`, the inverse of ``civilDate(daysSince1970:)``).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// An RFC 3339 date-time (§5.6), taken to the nearest microsecond (as PostgreSQL keeps
    /// times): `T` or `t`, a fraction of any number of digits (past the ninth they are
    /// dropped), and `Z`, `z` or an offset in hours and minutes (`+01:00`, or as ISO 8601 also
    /// writes it, `+0100` or `+01`); nothing before or after it. What a parser would roll over
    /// into another time is refused: a leap second (`23:59:60`: nothing we store can hold it)
    /// and a day the month does not have (`02-30`), since the client meant neither the next
    /// minute nor March. Read by hand: Foundation's ISO 8601 parser took what followed a time
    /// (`…Zjunk`), read `+01:0012` as an offset with seconds, and refused a lowercase `t` and a
    /// tenth fractional digit.
    package static func parseTimestamp(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func isDigit(_ index: Int) -> Bool { index < bytes.count && (48...57).contains(bytes[index]) }
        func number(_ range: Range<Int>) -> Int64? {
            guard range.allSatisfy(isDigit) else { return nil }
            return range.reduce(0) { $0 * 10 + Int64(bytes[$1] - 48) }
        }
        func byte(_ index: Int, _ allowed: String) -> Bool {
            index < bytes.count && allowed.utf8.contains(bytes[index])
        }
        guard byte(4, "-"), byte(7, "-"), byte(10, "Tt"), byte(13, ":"), byte(16, ":"),
            let year = number(0..<4), let month = number(5..<7), (1...12).contains(month),
            let day = number(8..<10), day >= 1, day <= daysIn(month: Int(month), of: Int(year)),
            let hour = number(11..<13), hour < 24, let minute = number(14..<16), minute < 60,
            let second = number(17..<19), second < 60
        else { return nil }
        var index = 19
        var nanoseconds: Int64 = 0
        if byte(index, ".") {
            index += 1
            let digits = bytes[index...].prefix { (48...57).contains($0) }.count
            guard digits > 0 else { return nil }
            let kept = min(digits, 9)
            nanoseconds = (number(index..<index + kept) ?? 0) * (0..<(9 - kept)).reduce(1) { value, _ in value * 10 }
            index += digits
        }
        var offset: Int64 = 0
        if byte(index, "Zz") {
            index += 1
        } else if byte(index, "+-"), let hours = number(index + 1..<index + 3), hours < 24 {
            // `+01:00` as RFC 3339 has it; `+0100` and `+01` as ISO 8601 also writes them (and
            // Foundation's format style does by default, so Swift clients send them).
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            let colon = byte(index + 3, ":") ? 1 : 0
            var minutes: Int64 = 0
            index += 3
            if colon == 1 || isDigit(index) {
                guard let written = number(index + colon..<index + colon + 2), written < 60 else { return nil }
                minutes = written
                index += colon + 2
            }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        // The nearest microsecond (halves up), as PostgreSQL will keep it: every check made on
        // the time (a deadline not after the start, 31 days at most, an instance of a series)
        // then sees what is stored, not a fraction of a microsecond that is not. Counted from
        // 2001, `Date`'s own epoch, so the whole seconds are exact and only the microseconds' sum
        // is rounded (as `ExactTimestamp` counts them back).
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset - 978_307_200
        let microseconds = (nanoseconds + 500) / 1_000
        return Date(timeIntervalSinceReferenceDate: Double(seconds) + Double(microseconds) / 1_000_000)
    }
}

extension Request {
    /// Decodes a JSON body, turning a decoding failure into `VALIDATION_FAILED` naming the field.
    /// The body must be declared `application/json` and sent without a content coding (`415
    /// UNSUPPORTED_MEDIA_TYPE` otherwise, so a form, a text or a compressed body is never read
    /// as if it were plain JSON), and be JSON (RFC 8259) with each key once in its object
    /// (``StrictJSON``): a trailing comma is not JSON, though Foundation's decoder reads past it,
    /// and of a key named twice decoders keep one value silently, so the other was never checked.
    package func decodeJSON<Body: Decodable>(as type: Body.Type, context: some RequestContext) async throws -> Body {
        let buffer = try await body.collect(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else { throw APIError.badRequest("A JSON body is required") }
        guard Self.declaresJSON(headers[.contentType]) else { throw APIError.unsupportedMediaType }
        guard Self.isUncoded(headers[values: .contentEncoding]) else { throw APIError.unsupportedContentCoding }
        switch StrictJSON.problem(in: buffer.readableBytesView) {
        case .repeatedKey(let path)?: throw APIError.validation([path: "appears more than once in the object"])
        case .trailingComma?, .notJSON?: throw APIError.validation(["body": "is not valid JSON"])
        case .numberOutOfRange(let path)?:
            throw APIError.validation([path.isEmpty ? "body" : path: "is a number too large or too small to hold"])
        case nil: break
        }
        do {
            return try JSONCoding.decoder.decode(Body.self, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            throw APIError.validation(Self.fieldErrors(error))
        }
    }

    /// `application/json`, in any case, with or without parameters, in UTF-8: a `charset`, if
    /// given, is `utf-8` or its subset `us-ascii` (JSON between systems is UTF-8, RFC 8259 §8.1;
    /// a body declared in another, or in an empty one, is not read as if it were UTF-8).
    static func declaresJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { return false }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0] == "charset" else { continue }
            let charset = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            if !["utf-8", "utf8", "us-ascii"].contains(charset) { return false }
        }
        return true
    }

    /// Whether the `Content-Encoding` fields say the body is as sent: none, or only `identity`.
    static func isUncoded(_ fields: [String]) -> Bool {
        fields.allSatisfy { field in
            field.split(separator: ",").allSatisfy {
                $0.trimmingCharacters(in: .whitespaces).lowercased() == "identity"
            }
        }
    }

    /// What a decoder wanted, in JSON's words rather than Swift's (`Dictionary<String, Any>`).
    static func jsonKind(_ type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Dictionary") { return "an object" }
        if name.hasPrefix("Array") { return "a list" }
        if name == "String" || name == "UUID" || name == "Date" { return "a string" }
        if name == "Bool" { return "true or false" }
        if ["Int", "Int64", "Int32", "Double", "Float", "Decimal", "UInt", "UInt64"].contains(name) {
            return "a number"
        }
        return "a value of another type"
    }

    private static func fieldErrors(_ error: DecodingError) -> [String: String] {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return [path(context.codingPath + [key]): "is required"]
        case .typeMismatch(let type, let context):
            return [path(context.codingPath).isEmpty ? "body" : path(context.codingPath): "must be \(jsonKind(type))"]
        case .valueNotFound(_, let context):
            // A body of `null`: every body here is an object.
            let field = path(context.codingPath)
            return field.isEmpty ? ["body": "must be an object"] : [field: "must not be null"]
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

    /// The envelope around JSON written beforehand, put together in one buffer: the same bytes
    /// as the encoder writes for it, without the encoder copying a body of a megabyte.
    package static func data(
        _ payload: RawJSON, status: HTTPResponse.Status = .ok, requestId: String?, headers: HTTPFields = [:]
    ) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        let body = try envelope(payload, meta: ResponseMeta(requestId: requestId))
        return Response(status: status, headers: fields, body: .init(byteBuffer: body))
    }

    /// The envelope around JSON kept as a buffer, which is sent as it is, between the envelope's
    /// beginning and its end, rather than copied into one buffer with them (a window of a
    /// megabyte, kept for its reader: `KnownWindows`). Labelled: `ByteBuffer` is `Encodable`
    /// (as base64), so without the label a call with other arguments could pick the generic one.
    package static func data(json payload: ByteBuffer, requestId: String?) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(contentsOf: try envelope(parts: payload, meta: ResponseMeta(requestId: requestId))))
    }

    /// `{"data":…,"meta":…}` in three parts, the second `payload` itself: the same bytes as the
    /// encoder writes for ``DataEnvelope``.
    package static func envelope(parts payload: ByteBuffer, meta: ResponseMeta) throws -> [ByteBuffer] {
        let meta = try JSONCoding.encoder.encodeBytes(meta)
        var end = ByteBuffer()
        end.reserveCapacity(meta.count + 10)
        end.writeStaticString(#","meta":"#)
        end.writeBytes(meta)
        end.writeStaticString("}")
        return [ByteBuffer(string: #"{"data":"#), payload, end]
    }

    /// `{"data":…,"meta":…}`, or with `pagination` `{"data":…,"meta":…,"pagination":…}`: keys in
    /// the encoder's (sorted) order, the same bytes as it writes for ``DataEnvelope`` and
    /// ``ListEnvelope``.
    package static func envelope(
        _ payload: RawJSON, meta: ResponseMeta, pagination: CursorPagination? = nil
    ) throws -> ByteBuffer {
        let metaBytes = try JSONCoding.encoder.encodeBytes(meta)
        let paginationBytes = try pagination.map(JSONCoding.encoder.encodeBytes) ?? []
        var buffer = ByteBuffer()
        buffer.reserveCapacity(payload.bytes.count + metaBytes.count + paginationBytes.count + 36)
        buffer.writeStaticString(#"{"data":"#)
        buffer.writeBytes(payload.bytes)
        buffer.writeStaticString(#","meta":"#)
        buffer.writeBytes(metaBytes)
        if pagination != nil {
            buffer.writeStaticString(#","pagination":"#)
            buffer.writeBytes(paginationBytes)
        }
        buffer.writeStaticString("}")
        return buffer
    }

    package static func json<Body: Encodable>(
        _ body: Body, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        let bytes = try JSONCoding.encoder.encodeBytes(body)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
