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
        self.clientAddress = context.clientAddress
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
    /// Refresh tokens, after revocation or expiry (spent tokens stay until then, for reuse detection).
    static let deadRefreshTokens = "30 days"
}

extension RequestFacts {
    /// How a change others care about is recorded: its entry in the community's audit log and
    /// the message that tells the notifications service, both in the change's transaction.
    func recordChange(
        _ action: String, by actor: UUID, in community: UUID, target: (type: String, id: UUID),
        metadata: [String: JSONValue] = [:], announcing payload: some MessagePayload,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await AuditLog.record(
            action, userId: actor, communityId: community, targetType: target.type, targetId: target.id,
            metadata: metadata, ipAddress: clientAddress, on: connection, logger: logger)
        try await Outbox.enqueue(
            MessageEnvelope(communityId: community, actorId: actor, data: payload), to: .notifications,
            traceparent: traceparent, on: connection, logger: logger)
    }
}
