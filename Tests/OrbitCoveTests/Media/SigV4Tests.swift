import Crypto
import Foundation
import MediaService
import OrbitCoveInfra
import Testing

/// Our SigV4 signer against the examples AWS publishes (the S3 documentation's and the SigV4
/// test suite's, in `scripts/media/sigv4_vectors.json`, each naming its source). `make
/// media-check` also holds it against botocore on 500 random requests.
@Suite struct SigV4Tests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            struct Expected: Decodable {
                var canonicalRequest: String?
                var signature: String?
                var url: String?
                var authorization: String?
            }

            var name: String
            var request: SigV4Request
            var expected: Expected
        }

        var vectors: [Vector]
    }

    static let vectors: [Vectors.Vector] = {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "scripts/media/sigv4_vectors.json")
        guard let data = try? Data(contentsOf: file),
            let vectors = try? JSONDecoder().decode(Vectors.self, from: data)
        else { return [] }
        return vectors.vectors
    }()

    @Test func thePublishedExamplesAreThere() {
        #expect(Self.vectors.count >= 20)
    }

    @Test(arguments: vectors.map(\.name))
    func ourSignatureIsThePublishedOne(_ name: String) throws {
        let vector = try #require(Self.vectors.first { $0.name == name })
        let signed = vector.request.sign()
        #expect(signed.error == nil)
        // Each example gives its signature, alone or inside its Authorization header.
        #expect(vector.expected.signature != nil || vector.expected.authorization != nil)
        if let signature = vector.expected.signature { #expect(signed.signature == signature) }
        if let canonical = vector.expected.canonicalRequest { #expect(signed.canonicalRequest == canonical) }
        if let url = vector.expected.url { #expect(signed.url == url) }
        if let authorization = vector.expected.authorization {
            #expect(signed.headers?["Authorization"] == authorization)
        }
    }
}
