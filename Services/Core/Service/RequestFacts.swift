import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// What a change records about the request that made it: where from (audit log) and which
/// trace it belongs to (carried into the messages it causes).
struct RequestFacts: Sendable {
    var clientAddress: String
    var traceparent: String?

    init(_ request: Request, _ context: AppRequestContext) {
        self.clientAddress = context.clientAddress(of: request)
        self.traceparent = context.traceparent.isEmpty ? nil : context.traceparent
    }
}

/// How long deleted things can come back, and when the retention jobs remove them for good.
enum Retention {
    static let accountGrace = "7 days"
    static let communityGrace = "30 days"
    static let idempotencyKeys = "24 hours"
    static let expiredInvites = "7 days"
    static let changeLog = "90 days"
}

extension Outbox {
    /// Queues `payload` for the notifications service, in the caller's transaction.
    static func announce(
        _ payload: some MessagePayload, community: UUID, actor: UUID, request: RequestFacts,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await enqueue(
            MessageEnvelope(communityId: community, actorId: actor, data: payload), to: .notifications,
            traceparent: request.traceparent, on: connection, logger: logger)
    }
}
