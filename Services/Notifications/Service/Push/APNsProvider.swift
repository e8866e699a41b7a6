import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import OrbitCoveInfra
import ServiceLifecycle

/// Apple's push service over HTTP/2 (negotiated by ALPN; APNs speaks nothing else), one
/// multiplexed connection per environment, authenticated with a ``ProviderToken``. A
/// `Service`: its HTTP client is made when the service group runs it and shut down (with its
/// connections) when the group shuts down. A push sent before then waits for the start; one
/// sent after is retried later, like any push that could not be sent.
///
/// Answers, as Apple documents them: 200 accepted (`apns-id`); 410 `Unregistered` and 400
/// `BadDeviceToken` / `DeviceTokenNotForTopic` drop the token; 403 `ExpiredProviderToken` /
/// `InvalidProviderToken` sign a new token and try once more; 429 and 5xx (and a connection
/// that fails) are retried later; any other refusal is final for that push.
final class APNsProvider: PushProvider, Service {
    private let client = ServiceResource<HTTPClient>("APNs client")
    private let configuration: HTTPClient.Configuration
    private let settings: APNsSettings
    private let token: ProviderToken
    private let logger: Logger
    static let timeout = TimeAmount.seconds(15)

    init(settings: APNsSettings, logger: Logger) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: .seconds(30)))
        configuration.httpVersion = .automatic
        self.configuration = configuration
        self.settings = settings
        token = ProviderToken(key: settings.key, keyId: settings.keyId, teamId: settings.teamId)
        self.logger = logger
    }

    func run() async throws {
        let configuration = self.configuration
        try await client.serve(
            make: { HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration) },
            close: { try await $0.shutdown() },
            while: { _ in try? await gracefulShutdown() })
    }

    func send(_ message: PushMessage) async -> PushOutcome {
        let first = await attempt(message)
        // Only an expired token is cured by signing a new one. An invalid one is a key problem,
        // and re-signing on every push would trip APNs' limit on token updates: it waits for
        // the retry tiers like any refusal for now.
        guard case .retry(403, "ExpiredProviderToken") = first.outcome, let used = first.providerToken else {
            return first.outcome
        }
        token.discard(used)
        return await attempt(message).outcome
    }

    private func attempt(_ message: PushMessage) async -> (outcome: PushOutcome, providerToken: String?) {
        let bearer: String
        do {
            bearer = try await token.token()
        } catch {
            return (.retry(status: nil, reason: "could not sign a provider token: \(error)"), nil)
        }
        let base = message.environment == .production ? settings.productionURL : settings.sandboxURL
        var request = HTTPClientRequest(url: base.absoluteString + "/3/device/" + message.token)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(bearer)")
        request.headers.add(name: "apns-topic", value: message.topic)
        request.headers.add(name: "apns-push-type", value: message.pushType)
        request.headers.add(name: "apns-priority", value: String(message.priority))
        if let collapseId = message.collapseId { request.headers.add(name: "apns-collapse-id", value: collapseId) }
        if let expiration = message.expiration {
            request.headers.add(name: "apns-expiration", value: String(Int(expiration.timeIntervalSince1970)))
        }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: message.payload))
        do {
            let response = try await client.running().execute(request, timeout: Self.timeout)
            let body = try await response.body.collect(upTo: 16 * 1024)
            let outcome = APNsAnswer.outcome(
                status: Int(response.status.code), apnsId: response.headers.first(name: "apns-id"),
                body: Array(buffer: body))
            if case .retry(let status, let reason) = outcome {
                logger.notice(
                    "APNs asked for a retry", metadata: ["status": "\(status ?? 0)", "reason": .string(reason)])
            }
            return (outcome, bearer)
        } catch {
            logger.notice("APNs request failed", metadata: ["error": .string("\(error)")])
            return (.retry(status: nil, reason: "request failed: \(type(of: error))"), bearer)
        }
    }
}

/// What an APNs answer means for the push and its token.
package enum APNsAnswer {
    package static func outcome(status: Int, apnsId: String?, body: [UInt8]) -> PushOutcome {
        if status == 200 { return .accepted(apnsId: apnsId) }
        let answer = try? JSONDecoder().decode(Answer.self, from: Data(body))
        let reason = answer?.reason ?? "status \(status)"
        switch (status, reason) {
        case (410, _):
            let since = answer?.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
            return .refused(status: status, reason: reason, dropToken: true, invalidSince: since)
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return .refused(status: status, reason: reason, dropToken: true, invalidSince: nil)
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"), (429, _), (500...599, _):
            return .retry(status: status, reason: reason)
        default:
            return .refused(status: status, reason: reason, dropToken: false, invalidSince: nil)
        }
    }

    private struct Answer: Decodable {
        var reason: String?
        var timestamp: Double?
    }
}
