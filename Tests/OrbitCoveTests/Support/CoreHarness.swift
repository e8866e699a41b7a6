import AuthService
import CoreService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The core API as clients use it, against the real PostgreSQL, Redis and RabbitMQ: auth runs
/// live (core fetches its JWKS over HTTP), people sign in with auth's development sign-in,
/// and requests go through core's whole router (middleware, token verification, routes).
struct CoreHarness: Sendable {
    let auth: any TestClientProtocol
    let core: any TestClientProtocol
    /// Where auth publishes its keys, for other services a test starts.
    let jwksURL: String

    struct Person: Sendable {
        var id: UUID
        var name: String
        var token: String
    }

    struct Reply: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: Data

        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
        var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
        var fieldErrors: [String: String] {
            (((json?["error"] as? [String: Any])?["details"] as? [String: Any])?["fields"] as? [String: String]) ?? [:]
        }

        func data<Payload: Decodable>(_ type: Payload.Type) throws -> Payload {
            try JSONCoding.decoder.decode(DataOnly<Payload>.self, from: body).data
        }

        func page<Item: Decodable>(_ type: Item.Type) throws -> (items: [Item], next: String?) {
            let page = try JSONCoding.decoder.decode(Page<Item>.self, from: body)
            return (page.data, page.pagination.nextCursor)
        }
    }

    private struct Page<Item: Decodable>: Decodable {
        struct Pagination: Decodable { var nextCursor: String? }
        var data: [Item]
        var pagination: Pagination
    }

    /// Runs `body` with auth live and core in process; `core` settings override defaults
    /// (rate limits, say).
    static func run(
        core coreSettings: [String: String] = [:], service serviceSettings: [String: String] = [:],
        _ body: @Sendable (CoreHarness) async throws -> Void
    )
        async throws
    {
        let authRuntime = try TestEnvironment.runtime(name: "orbitcove-auth")
        let auth = authRuntime.makeApplication(
            try await AuthApplication.parts(
                runtime: authRuntime,
                environment: Environment([
                    "ORBITCOVE_AUTH_DEV_LOGIN": "true",
                    "ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation,
                ])))
        try await auth.test(.live) { authClient in
            let jwksURL = "http://127.0.0.1:\(try #require(authClient.port))/.well-known/jwks.json"
            let runtime = try TestEnvironment.runtime(
                name: "orbitcove-core",
                extra: serviceSettings.merging(["ORBITCOVE_JWKS_URL": jwksURL]) { _, new in new })
            let core = runtime.makeApplication(
                try CoreApplication.parts(runtime: runtime, environment: Environment(coreSettings)))
            try await core.test(.router) { coreClient in
                try await body(CoreHarness(auth: authClient, core: coreClient, jwksURL: jwksURL))
            }
        }
    }

    func signIn(_ name: String) async throws -> Person {
        let email = "\(name.lowercased())-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let response = try await auth.executeRequest(
            uri: "/api/v1/auth/dev", method: .post,
            headers: [.realIP: TestEnvironment.uniqueClientAddress(), .contentType: "application/json"],
            body: ByteBuffer(string: #"{"email":"\#(email)","displayName":"\#(name)"}"#))
        let json = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        let data = try #require(json?["data"] as? [String: Any])
        let user = try #require(data["user"] as? [String: Any])
        return Person(
            id: try #require((user["id"] as? String).flatMap(UUID.init(uuidString:))), name: name,
            token: try #require(data["accessToken"] as? String))
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, as person: Person?, json: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        var fields = headers
        if let person { fields[.authorization] = "Bearer \(person.token)" }
        if json != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        if fields[.realIP] == nil { fields[.realIP] = "10.9.\(Int.random(in: 0...255)).\(Int.random(in: 1...254))" }
        let response = try await core.executeRequest(
            uri: path, method: method, headers: fields, body: json.map { ByteBuffer(string: $0) })
        return Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
    }

    /// A new community created by `admin`.
    func community(by admin: Person, name: String? = nil, settings: String = "{}") async throws -> Community {
        let name = name ?? "Club \(UUID().uuidString.prefix(6))"
        let reply = try await call(
            .post, "/api/v1/communities", as: admin, json: #"{"name":"\#(name)","settings":\#(settings)}"#)
        return try reply.data(Community.self)
    }

    /// A new community created by `admin` that each of `members` has joined.
    func club(of admin: Person, with members: [Person]) async throws -> Community {
        let club = try await community(by: admin)
        for member in members { try await join(member, club, invitedBy: admin) }
        return club
    }

    /// `person` joins `community` with a fresh invite made by `admin`.
    func join(_ person: Person, _ community: Community, invitedBy admin: Person) async throws {
        let invite = try await call(.post, "/api/v1/communities/\(community.id)/invites", as: admin, json: "{}")
            .data(Invite.self)
        let joined = try await call(.post, "/api/v1/invites/\(invite.code)/join", as: person)
        guard joined.status == .created else {
            throw TestFailure("join failed: \(joined.status) \(joined.errorCode ?? "")")
        }
    }
}

/// The `data` of a success envelope.
struct DataOnly<Payload: Decodable>: Decodable { var data: Payload }

func decodeData<Payload: Decodable>(_ type: Payload.Type, _ response: TestResponse) throws -> Payload {
    try JSONCoding.decoder.decode(DataOnly<Payload>.self, from: Data(buffer: response.body)).data
}

func decodeError(_ response: TestResponse) throws -> ErrorEnvelope {
    try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
}
