import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// The notifications service: consumes the `notifications` queue into users' notification
/// history and serves that history.
package enum NotificationsApplication {
    package static let defaultPort = 8083
    package static let consumerName = "notifications"

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(runtime: ServiceRuntime) throws -> ServiceParts {
        try .queueWorker(runtime: runtime, queue: .notifications, consumer: consumerName, register: register) {
            router, database in
            NotificationRoutes(store: NotificationStore(database: database, logger: runtime.logger("history")))
                .register(on: router)
        }
    }

    static func register(_ handlers: inout MessageHandlers) {
        handlers.on(CommunityCreated.self) { envelope, connection, logger in
            try await NotificationStore.record(
                userId: envelope.data.createdBy, communityId: envelope.data.communityId, type: .communityUpdate,
                title: "\(envelope.data.name) is ready",
                body: "Invite members with an invite code from the community's settings.",
                data: ["communityId": .string(envelope.data.communityId.uuidString)],
                on: connection, logger: logger)
        }
    }
}
