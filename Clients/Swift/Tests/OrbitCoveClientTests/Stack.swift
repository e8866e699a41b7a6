import Foundation
import OrbitCoveClient
import Testing

/// The running stack the tests call through its gateway, as the app does: `make client-test`
/// sets `ORBITCOVE_CLIENT_TEST_URL` (without it the suites are skipped, saying why).
enum Stack {
    static let url = ProcessInfo.processInfo.environment["ORBITCOVE_CLIENT_TEST_URL"].flatMap(URL.init(string:))
    static let needed = "needs the running stack: make client-test"
}

/// A person signed in through the development route, with the client the app would hold.
struct Person {
    let client: Client
    let session: Session
    let id: String
    let name: String

    static func signIn(_ name: String) async throws -> Person {
        let session = Session()
        let client = Client.orbitCove(serverURL: try #require(Stack.url), session: session)
        let email = "\(name.lowercased())-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let grant = try await client.devSignIn(body: .json(.init(email: email, displayName: name))).ok.body.json
            .value2.data
        #expect(grant.tokenType == .bearer && grant.user.displayName == name && grant.user.email == email)
        await session.signIn(.init(accessToken: grant.accessToken, refreshToken: grant.refreshToken))
        return Person(client: client, session: session, id: grant.user.id, name: name)
    }

    /// A new community of this person's.
    func community(_ name: String = "Tigers U11") async throws -> Components.Schemas.Community {
        try await client.createCommunity(body: .json(.init(name: name, settings: .init(timezone: "Europe/London"))))
            .created.body.json.value2.data
    }

    /// `other` joins `community` with a fresh invite of this person's.
    func invite(
        _ other: Person, to community: Components.Schemas.Community
    ) async throws
        -> Components.Schemas.Community
    {
        let invite = try await client.createInvite(
            path: .init(communityId: community.id), body: .json(.init(maxUses: 5))
        )
        .created.body.json.value2.data
        return try await other.client.joinByInviteCode(path: .init(code: invite.code)).created.body.json.value2.data
    }
}

/// Waits until `read` gives something (the API's queued work lands within a few seconds).
func eventually<Value>(_ read: () async throws -> Value?) async throws -> Value {
    for _ in 0..<100 {
        if let value = try await read() { return value }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw Timeout()
}

struct Timeout: Error {}
