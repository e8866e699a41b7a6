import APNsStandIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// One APNs stand-in for the whole test process. Every notifications service a test starts
/// consumes the one `notifications` queue, so any of them may send another test's pushes:
/// all of them push, with the production APNs provider, to this endpoint, with one key.
actor SharedAPNs {
    static let shared = SharedAPNs()
    static let keyId = "KEY1234567"
    static let teamId = "TEAM123456"
    static let topic = "app.orbitcove.tests"
    private static let key = P256.Signing.PrivateKey()
    private var starting: Task<(standIn: APNsStandIn, settings: [String: String]), any Error>?

    /// The stand-in, started on first use (once, however many tests ask at the same time), and
    /// the settings that point a service at it.
    func start() async throws -> (standIn: APNsStandIn, settings: [String: String]) {
        if let starting { return try await starting.value }
        let task = Task { try await Self.launch() }
        starting = task
        return try await task.value
    }

    private static func launch() async throws -> (standIn: APNsStandIn, settings: [String: String]) {
        let tls = TLSTests.repository.appendingPathComponent(".local/tls").path
        let standIn = try await APNsStandIn.start(
            certificateChain: "\(tls)/server.pem", privateKey: "\(tls)/server.key",
            providerKey: key.publicKey, teamId: teamId, keyId: keyId, logger: TestEnvironment.logger)
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-\(UUID().uuidString).p8")
        try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        let url = "https://localhost:\(standIn.port)"
        let settings = [
            "ORBITCOVE_PUSH_PROVIDER": "apns", "ORBITCOVE_APNS_KEY_FILE": keyFile.path,
            "ORBITCOVE_APNS_KEY_ID": keyId, "ORBITCOVE_APNS_TEAM_ID": teamId,
            "ORBITCOVE_APNS_PRODUCTION_URL": url, "ORBITCOVE_APNS_SANDBOX_URL": url,
            "ORBITCOVE_APNS_CA_FILE": "\(tls)/ca.pem", "ORBITCOVE_APNS_TOPICS": "\(topic),app.orbitcove.other",
            "ORBITCOVE_PUSH_SCHEDULER_SECONDS": "1",
        ]
        return (standIn, settings)
    }
}

/// The notifications service in process, consuming the real queue and pushing to the shared
/// APNs stand-in, beside core (``CoreHarness``).
struct NotificationsHarness: Sendable {
    let api: CoreHarness
    let client: any TestClientProtocol
    let apns: APNsStandIn

    static func run(
        _ api: CoreHarness, settings extra: [String: String] = [:],
        _ body: @Sendable (NotificationsHarness) async throws -> Void
    ) async throws {
        let (standIn, settings) = try await SharedAPNs.shared.start()
        let runtime = try TestEnvironment.runtime(
            name: "orbitcove-notifications", extra: ["ORBITCOVE_JWKS_URL": api.jwksURL])
        let app = runtime.makeApplication(
            try NotificationsApplication.parts(
                runtime: runtime, environment: Environment(settings.merging(extra) { _, new in new })))
        try await app.test(.router) { client in
            try await body(NotificationsHarness(api: api, client: client, apns: standIn))
        }
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, as person: CoreHarness.Person?, json: String? = nil
    ) async throws -> CoreHarness.Reply {
        var fields: HTTPFields = [.realIP: TestEnvironment.uniqueClientAddress()]
        if let person { fields[.authorization] = "Bearer \(person.token)" }
        if json != nil { fields[.contentType] = "application/json" }
        let response = try await client.executeRequest(
            uri: path, method: method, headers: fields, body: json.map { ByteBuffer(string: $0) })
        return CoreHarness.Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
    }

    /// The person's notifications, newest first (up to 100).
    func history(of person: CoreHarness.Person, _ query: String = "") async throws -> [NotificationRecord] {
        try await call(.get, "/api/v1/me/notifications?limit=100\(query)", as: person).page(NotificationRecord.self)
            .items
    }

    /// Registers a new random device token for `person`.
    func device(for person: CoreHarness.Person, environment: PushEnvironment = .sandbox) async throws -> String {
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let reply = try await call(
            .post, "/api/v1/me/devices", as: person,
            json: #"{"token":"\#(token)","environment":"\#(environment.rawValue)","bundleId":"\#(SharedAPNs.topic)"}"#)
        guard reply.status == .created else { throw TestFailure("device: \(reply.status) \(reply.errorCode ?? "")") }
        return token
    }

    /// What the stand-in received for `token`.
    func pushes(to token: String) -> [APNsStandIn.Received] {
        apns.received().filter { $0.token == token }
    }

    /// What the stand-in received for `token`, one line each (type, notification, time,
    /// answer), for a failed expectation to show.
    func pushSummary(to token: String) -> String {
        let lines = pushes(to: token).map { push in
            let type = push.json?["type"]?.stringValue ?? "?"
            let notification = push.json?["notificationId"]?.stringValue ?? "?"
            return "\(type) \(notification) at \(push.at.formatted(.iso8601)) \(push.status)"
        }
        return lines.isEmpty ? "none" : lines.joined(separator: "; ")
    }

    /// What the stand-in received for `token` about notifications of `type`.
    func pushes(to token: String, of type: String) -> [APNsStandIn.Received] {
        pushes(to: token).filter { $0.json?["type"]?.stringValue == type }
    }
}

extension CoreHarness {
    /// The cast of most notification tests: a coach's new community and Ada, who joined it.
    func clubWithOneMember() async throws -> (coach: Person, club: Community, ada: Person) {
        let (coach, ada) = (try await signIn("Coach"), try await signIn("Ada"))
        let club = try await community(by: coach)
        try await join(ada, club, invitedBy: coach)
        return (coach, club, ada)
    }

    /// The same with Ben too.
    func clubWithTwoMembers() async throws -> (coach: Person, club: Community, ada: Person, ben: Person) {
        let (coach, club, ada) = try await clubWithOneMember()
        let ben = try await signIn("Ben")
        try await join(ben, club, invitedBy: coach)
        return (coach, club, ada, ben)
    }
}
