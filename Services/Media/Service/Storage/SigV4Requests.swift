import Foundation

// Requests described as data, signed with SigV4Signer: what `orbitcove-sigv4-dump` answers to
// scripts/media/sigv4_compare.py (held against botocore), and what SigV4Tests checks AWS's
// published examples with.

/// One request to sign. `headers` is a list of `[name, value]` so a name may repeat; the body is
/// `body` (UTF-8) or `bodyBase64`; `date` is `yyyyMMdd'T'HHmmss'Z'`.
package struct SigV4Request: Decodable, Sendable {
    /// Echoed in the answer, so a reader can pair them.
    package var id: String?
    package var mode: String
    package var method: String
    package var url: String
    package var headers: [[String]]?
    package var body: String?
    package var bodyBase64: String?
    package var unsignedPayload: Bool?
    package var date: String
    package var expires: Int?
    package var accessKey: String
    package var secretKey: String
    package var sessionToken: String?
    package var region: String
    package var service: String
}

package struct SigV4Result: Codable, Sendable, Equatable {
    package var id: String?
    package var headers: [String: String]?
    package var url: String?
    package var canonicalRequest: String?
    package var stringToSign: String?
    package var signature: String?
    package var error: String?

    package init(
        id: String?, headers: [String: String]? = nil, url: String? = nil, canonicalRequest: String? = nil,
        stringToSign: String? = nil, signature: String? = nil, error: String? = nil
    ) {
        self.id = id
        self.headers = headers
        self.url = url
        self.canonicalRequest = canonicalRequest
        self.stringToSign = stringToSign
        self.signature = signature
        self.error = error
    }
}

struct SigV4RequestError: Error, CustomStringConvertible {
    var description: String
}

extension SigV4Request {
    /// Signs this request as described; a description that cannot be signed gives `error`.
    package func sign() -> SigV4Result {
        do {
            guard let url = URL(string: url) else { throw SigV4RequestError(description: "not a URL: \(self.url)") }
            guard let date = SigV4Signer.date(fromTimestamp: date) else {
                throw SigV4RequestError(description: "bad date")
            }
            let headers = try (headers ?? []).map { pair in
                guard pair.count == 2 else { throw SigV4RequestError(description: "a header is [name, value]") }
                return (name: pair[0], value: pair[1])
            }
            let signer = SigV4Signer(
                accessKeyId: accessKey, secretAccessKey: secretKey, sessionToken: sessionToken, region: region,
                service: service, pathRule: service == "s3" ? .asSent : .normalizedAndEncodedTwice)
            let signed: SigV4Signature
            switch mode {
            case "headers":
                signed = try signer.signHeaders(
                    method: method, url: url, headers: headers, payloadHash: try payloadHash(), date: date)
            case "presign":
                signed = try signer.presign(
                    method: method, url: url, headers: headers, expires: expires ?? 3600, date: date)
            default:
                throw SigV4RequestError(description: "unknown mode \(mode)")
            }
            return SigV4Result(
                id: id, headers: Dictionary(signed.headers, uniquingKeysWith: { $1 }), url: signed.url,
                canonicalRequest: signed.canonicalRequest, stringToSign: signed.stringToSign,
                signature: signed.signature)
        } catch {
            return SigV4Result(id: id, error: "\(error)")
        }
    }

    private func payloadHash() throws -> String {
        if unsignedPayload == true { return SigV4Signer.unsignedPayload }
        var bytes = Data((body ?? "").utf8)
        if let bodyBase64 {
            guard let decoded = Data(base64Encoded: bodyBase64) else {
                throw SigV4RequestError(description: "bad base64")
            }
            bytes = decoded
        }
        return SigV4Signer.payloadHash(of: bytes)
    }
}
