import Foundation
import MediaService

// Signs the requests described by the JSON lines on stdin with SigV4Signer, one JSON line out
// for each in: what scripts/media/sigv4_compare.py holds against botocore's signers.

/// One request to sign. `headers` is a list of `[name, value]` so a name may repeat; the body is
/// `body` (UTF-8) or `bodyBase64`; `date` is `yyyyMMdd'T'HHmmss'Z'`.
struct DumpCase: Decodable {
    /// Echoed in the answer, so a reader can pair them.
    var id: String?
    var mode: String
    var method: String
    var url: String
    var headers: [[String]]?
    var body: String?
    var bodyBase64: String?
    var unsignedPayload: Bool?
    var date: String
    var expires: Int?
    var accessKey: String
    var secretKey: String
    var sessionToken: String?
    var region: String
    var service: String
}

struct DumpResult: Encodable {
    var id: String?
    var headers: [String: String]?
    var url: String?
    var canonicalRequest: String?
    var stringToSign: String?
    var signature: String?
    var error: String?
}

struct DumpError: Error, CustomStringConvertible {
    var description: String
}

extension DumpCase {
    func run() -> DumpResult {
        do {
            guard let url = URL(string: url) else { throw DumpError(description: "not a URL: \(self.url)") }
            guard let date = SigV4Signer.date(fromTimestamp: date) else { throw DumpError(description: "bad date") }
            let headers = try (headers ?? []).map { pair in
                guard pair.count == 2 else { throw DumpError(description: "a header is [name, value]") }
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
                throw DumpError(description: "unknown mode \(mode)")
            }
            return DumpResult(
                id: id, headers: Dictionary(signed.headers, uniquingKeysWith: { $1 }), url: signed.url,
                canonicalRequest: signed.canonicalRequest, stringToSign: signed.stringToSign,
                signature: signed.signature)
        } catch {
            return DumpResult(id: id, error: "\(error)")
        }
    }

    private func payloadHash() throws -> String {
        if unsignedPayload == true { return SigV4Signer.unsignedPayload }
        var bytes = Data((body ?? "").utf8)
        if let bodyBase64 {
            guard let decoded = Data(base64Encoded: bodyBase64) else { throw DumpError(description: "bad base64") }
            bytes = decoded
        }
        return SigV4Signer.payloadHash(of: bytes)
    }
}

let decoder = JSONDecoder()
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
while let line = readLine(strippingNewline: true) {
    guard !line.isEmpty else { continue }
    let result: DumpResult
    do {
        result = try decoder.decode(DumpCase.self, from: Data(line.utf8)).run()
    } catch {
        result = DumpResult(id: nil, error: "unreadable line: \(error)")
    }
    FileHandle.standardOutput.write(try encoder.encode(result) + Data("\n".utf8))
}
