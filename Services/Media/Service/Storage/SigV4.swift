import Crypto
import Foundation
import OrbitCoveInfra

/// AWS Signature Version 4, the scheme S3 and every S3-compatible store check, written here
/// because the project has no Swift S3 library. `scripts/media/sigv4_compare.py` holds it to
/// botocore's signers over AWS's published examples and generated requests.
///
/// The canonical request follows AWS's rules, where most hand-written signers slip:
/// - every byte but `A-Z a-z 0-9 - _ . ~` is percent-encoded, with upper-case hex;
/// - S3 signs the path as it is sent, encoded once and never normalised (`a//b/../c` is a key
///   like any other); every other service removes dot and empty segments and encodes the
///   already-encoded path again (``PathRule``);
/// - query parameters are decoded from the URL and encoded again, so a URL written by any
///   encoder signs the same, then sorted by encoded name and then value, byte by byte;
/// - header names are lower-cased and values trimmed, each run of whitespace inside made one
///   space; a name given twice is signed once with its values joined by commas;
/// - `host` is the URL's, with the port only when it is not the scheme's default.
package struct SigV4Signer: Sendable {
    /// How the URL's path enters the canonical request.
    package enum PathRule: Sendable {
        /// S3's: the path as sent, encoded once (escapes already in it are kept), never normalised.
        case asSent
        /// Every other service's: dot and empty segments removed, then the path encoded again.
        case normalizedAndEncodedTwice
    }

    package var accessKeyId: String
    package var secretAccessKey: String
    /// Temporary credentials' token: signed as `x-amz-security-token`.
    package var sessionToken: String?
    package var region: String
    package var service: String
    package var pathRule: PathRule

    package init(
        accessKeyId: String, secretAccessKey: String, sessionToken: String? = nil, region: String,
        service: String = "s3", pathRule: PathRule = .asSent
    ) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
        self.pathRule = pathRule
    }

    /// The payload hash of a presigned request, whose body the signer never sees.
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The payload hash of a body the signer vouches for: its SHA-256 in lower-case hex.
    package static func payloadHash(of body: Data) -> String {
        SHA256.hash(data: body).lowerHex
    }

    /// The headers that sign a request sent with `headers` (all of them are signed, so pass
    /// only what will be sent unchanged) and a body whose SHA-256 is `payloadHash` (lower-case
    /// hex, or ``unsignedPayload``).
    package func signHeaders(
        method: String, url: URL, headers: [(name: String, value: String)], payloadHash: String, date: Date
    ) throws -> SigV4Signature {
        let target = try SigV4Target(url)
        let timestamp = Self.timestamp(date)
        var added = [("x-amz-date", timestamp)]
        if service == "s3" { added.append(("x-amz-content-sha256", payloadHash)) }
        if let sessionToken { added.append(("x-amz-security-token", sessionToken)) }
        let replaced = Set(added.map(\.0) + ["authorization"])
        let signed = target.withHost(headers.filter { !replaced.contains($0.name.lowercased()) } + added)
        var result = sign(method, target, signed, query: target.query, payloadHash: payloadHash, timestamp)
        result.url = url.absoluteString
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(accessKeyId)/\(scope(timestamp)), "
            + "SignedHeaders=\(Self.signedHeaderNames(signed)), Signature=\(result.signature)"
        result.headers = [("Authorization", authorization)] + added
        return result
    }

    /// A URL that carries its own signature in the query, valid for `expires` seconds from
    /// `date` (1 to 604 800, a week, as S3 allows). The request must be sent with `headers`.
    package func presign(
        method: String, url: URL, headers: [(name: String, value: String)], expires: Int, date: Date
    ) throws -> SigV4Signature {
        guard (1...604_800).contains(expires) else { throw SigV4Error.expiryOutOfRange(expires) }
        let target = try SigV4Target(url)
        let timestamp = Self.timestamp(date)
        let signed = target.withHost(headers)
        var added = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "\(accessKeyId)/\(scope(timestamp))"),
            ("X-Amz-Date", timestamp), ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", Self.signedHeaderNames(signed)),
        ]
        if let sessionToken { added.append(("X-Amz-Security-Token", sessionToken)) }
        let query = target.query + added.map { (Self.uriEncode($0.0.utf8), Self.uriEncode($0.1.utf8)) }
        var result = sign(method, target, signed, query: query, payloadHash: Self.unsignedPayload, timestamp)
        var components = target.components
        components.percentEncodedQuery = Self.canonicalQuery(query) + "&X-Amz-Signature=" + result.signature
        components.fragment = nil
        guard let signedURL = components.string else { throw SigV4Error.invalidURL(url.absoluteString) }
        result.url = signedURL
        return result
    }

    private func sign(
        _ method: String, _ target: SigV4Target, _ headers: [(name: String, value: String)],
        query: [(name: String, value: String)], payloadHash: String, _ timestamp: String
    ) -> SigV4Signature {
        let canonicalRequest = [
            method.uppercased(), canonicalPath(target.path), Self.canonicalQuery(query),
            Self.canonicalHeaders(headers), Self.signedHeaderNames(headers), payloadHash,
        ].joined(separator: "\n")
        let stringToSign = [
            "AWS4-HMAC-SHA256", timestamp, scope(timestamp),
            SHA256.hash(data: Data(canonicalRequest.utf8)).lowerHex,
        ].joined(separator: "\n")
        let signature = HMAC<SHA256>.authenticationCode(
            for: Data(stringToSign.utf8), using: signingKey(day: String(timestamp.prefix(8))))
        return SigV4Signature(
            headers: [], url: "", canonicalRequest: canonicalRequest,
            stringToSign: stringToSign, signature: signature.lowerHex)
    }

    /// The key of one day, region and service: the secret itself never signs a request.
    private func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    private func scope(_ timestamp: String) -> String {
        "\(timestamp.prefix(8))/\(region)/\(service)/aws4_request"
    }
}

/// What signing made, with the texts it signed so tests can compare them with a reference.
package struct SigV4Signature: Sendable {
    /// The headers to add to the request; none for a presigned URL.
    package var headers: [(name: String, value: String)]
    /// The URL to send: the one given for signed headers, the one with the signature in its query for presigning.
    package var url: String
    package var canonicalRequest: String
    package var stringToSign: String
    package var signature: String
}

extension SigV4Signer: CustomStringConvertible {
    /// Without the secret or the token, so a signer (or a store holding one) can be logged.
    package var description: String {
        "SigV4Signer(\(accessKeyId), \(region), \(service), secret redacted)"
    }
}

package enum SigV4Error: Error, Equatable {
    /// Not an absolute `http` or `https` URL with a host.
    case invalidURL(String)
    case expiryOutOfRange(Int)
}

extension SigV4Signer {
    /// The `host` a request to `url` is signed with: set it as the request's `Host` so the two agree.
    package static func host(of url: URL) throws -> String {
        try SigV4Target(url).host
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC, as `x-amz-date` and `X-Amz-Date` carry it.
    package static func timestamp(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(
                dateSeparator: .omitted, dateTimeSeparator: .standard, timeSeparator: .omitted, timeZone: .gmt))
    }

    /// The date a ``timestamp(_:)`` names, or `nil` when `text` is not one.
    package static func date(fromTimestamp text: String) -> Date? {
        try? Date.ISO8601FormatStyle(
            dateSeparator: .omitted, dateTimeSeparator: .standard, timeSeparator: .omitted, timeZone: .gmt
        ).parse(text)
    }

    /// SigV4's URI encoding of `bytes`: all but the unreserved characters (and `/` when the
    /// slashes of a path are kept) become `%XX`.
    package static func uriEncode(_ bytes: some Sequence<UInt8>, keepingSlashes: Bool = false) -> String {
        var encoded: [UInt8] = []
        for byte in bytes {
            if isUnreserved(byte) || (keepingSlashes && byte == UInt8(ascii: "/")) {
                encoded.append(byte)
            } else {
                encoded.append(contentsOf: escape(byte))
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func escape(_ byte: UInt8) -> [UInt8] {
        let digits = Array("0123456789ABCDEF".utf8)
        return [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The bytes `text` stands for, each valid `%XX` decoded; a `%` that starts no escape is itself.
    package static func percentDecoded(_ text: some StringProtocol) -> [UInt8] {
        var decoded: [UInt8] = []
        scan(text) { byte, _ in decoded.append(byte) }
        return decoded
    }

    /// Hands each byte `text` stands for to `body`, saying whether it came from a `%XX` escape.
    private static func scan(_ text: some StringProtocol, _ body: (_ byte: UInt8, _ escaped: Bool) -> Void) {
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                body(high << 4 | low, true)
                index += 3
            } else {
                body(bytes[index], false)
                index += 1
            }
        }
    }

    func canonicalPath(_ path: String) -> String {
        switch pathRule {
        case .asSent: Self.encodedOnce(path.isEmpty ? "/" : path)
        case .normalizedAndEncodedTwice: Self.uriEncode(Self.removingDotSegments(path).utf8, keepingSlashes: true)
        }
    }

    /// `path` with what is not yet encoded encoded. Escapes already there stay escapes (an
    /// encoded `/` is part of a key, not a separator), written with upper-case hex.
    static func encodedOnce(_ path: String) -> String {
        var encoded: [UInt8] = []
        scan(path) { byte, escaped in
            if !escaped && (isUnreserved(byte) || byte == UInt8(ascii: "/")) {
                encoded.append(byte)
            } else {
                encoded.append(contentsOf: escape(byte))
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// RFC 3986's dot-segment removal, with empty segments dropped too, as AWS services other than S3 expect.
    static func removingDotSegments(_ path: String) -> String {
        guard !path.isEmpty else { return "/" }
        var kept: [Substring] = []
        for segment in path.split(separator: "/") where segment != "." {
            if segment == ".." {
                _ = kept.popLast()
            } else {
                kept.append(segment)
            }
        }
        let lead = path.hasPrefix("/") ? "/" : ""
        let trail = path.hasSuffix("/") && !kept.isEmpty ? "/" : ""
        return lead + kept.joined(separator: "/") + trail
    }

    /// Parameters already encoded, sorted by name and then value.
    static func canonicalQuery(_ parameters: [(name: String, value: String)]) -> String {
        parameters
            .sorted { left, right in
                left.name == right.name
                    ? left.value.utf8.lexicographicallyPrecedes(right.value.utf8)
                    : left.name.utf8.lexicographicallyPrecedes(right.name.utf8)
            }
            .map { "\($0.name)=\($0.value)" }
            .joined(separator: "&")
    }

    /// One line a name, sorted, then the empty line that ends the block.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> String {
        var values: [String: [String]] = [:]
        for header in headers { values[header.name.lowercased(), default: []].append(trimmed(header.value)) }
        return values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .map { "\($0):\(values[$0, default: []].joined(separator: ","))\n" }
            .joined()
    }

    static func signedHeaderNames(_ headers: [(name: String, value: String)]) -> String {
        Set(headers.map { $0.name.lowercased() }).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .joined(separator: ";")
    }

    /// Leading and trailing whitespace gone, each run inside made one space (AWS's Trimall).
    static func trimmed(_ value: String) -> String {
        value.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}

/// The parts of a URL that signing reads, taken apart once.
private struct SigV4Target {
    var components: URLComponents
    /// The path as it will be sent (percent-encoded).
    var path: String
    /// The query's parameters, decoded and encoded again as SigV4 encodes (a name without `=`
    /// has an empty value). Kept as bytes between the two, so nothing is lost to UTF-8.
    var query: [(name: String, value: String)]
    /// `host`, or `host:port` when the port is not the scheme's default.
    var host: String

    init(_ url: URL) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var host = components.host?.lowercased(), !host.isEmpty
        else { throw SigV4Error.invalidURL(url.absoluteString) }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        if let port = components.port, port != (scheme == "https" ? 443 : 80) { host += ":\(port)" }
        self.components = components
        self.host = host
        path = components.percentEncodedPath
        query = (components.percentEncodedQuery ?? "").split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? SigV4Signer.percentDecoded(parts[1]) : []
            return (SigV4Signer.uriEncode(SigV4Signer.percentDecoded(parts[0])), SigV4Signer.uriEncode(value))
        }
    }

    /// `headers` with `host` added when the caller did not give one.
    func withHost(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        headers.contains { $0.name.lowercased() == "host" } ? headers : headers + [("host", host)]
    }
}
