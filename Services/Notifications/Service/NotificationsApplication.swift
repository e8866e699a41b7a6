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
            router, kit in
            NotificationRoutes(store: NotificationStore(database: kit.database, logger: runtime.logger("history")))
                .register(on: router)
        }
    }

    static func register(_ handlers: inout MessageHandlers) {
        handlers.on(CommunityCreated.self) { envelope, connection, logger in
            try await NotificationStore.record(
                userId: envelope.data.createdBy, communityId: envelope.data.communityId, type: .communityUpdate,
                title: "\(envelope.data.name) is ready",
                body: "Invite members with an invite code from the community's settings.",
                data: ["communityId": .string(envelope.data.communityId.lowercasedString)],
                on: connection, logger: logger)
        }
        handlers.on(MemberJoined.self) { envelope, connection, logger in
            let joined = envelope.data
            try await CommunityNews.tell(
                .admins(of: joined.communityId, except: joined.userId), community: joined.communityId,
                title: "\(joined.displayName) joined \(joined.communityName)", body: "Say hello!",
                subject: joined.userId, on: connection, logger: logger)
        }
        handlers.on(MemberLeft.self) { envelope, connection, logger in
            let left = envelope.data
            try await CommunityNews.tell(
                .admins(of: left.communityId, except: left.userId), community: left.communityId,
                title: "\(left.displayName) left \(left.communityName)", body: "They are no longer a member.",
                subject: left.userId, on: connection, logger: logger)
        }
        handlers.on(MemberRemoved.self) { envelope, connection, logger in
            let removed = envelope.data
            try await CommunityNews.tell(
                .user(removed.userId), community: removed.communityId,
                title: "You were removed from \(removed.communityName)",
                body: "An admin removed you. Ask them for a new invite code to rejoin.",
                subject: removed.userId, on: connection, logger: logger)
        }
        handlers.on(MemberRoleChanged.self) { envelope, connection, logger in
            let change = envelope.data
            let title =
                change.role == .admin
                ? "You are now an admin of \(change.communityName)"
                : "You are no longer an admin of \(change.communityName)"
            try await CommunityNews.tell(
                .user(change.userId), community: change.communityId, title: title,
                body: change.role == .admin
                    ? "You can now manage members, invites and settings." : "You remain a member.",
                subject: change.userId, on: connection, logger: logger)
        }
        handlers.on(CommunityUpdated.self) { envelope, connection, logger in
            let update = envelope.data
            // Deletion and restoration concern everyone; other edits reach clients through sync.
            let news: (String, String)? =
                update.changes.contains("deleted")
                ? ("\(update.name) was deleted", "An admin can restore it within 30 days.")
                : update.changes.contains("restored") ? ("\(update.name) is back", "An admin restored it.") : nil
            guard let (title, body) = news else { return }
            try await CommunityNews.tell(
                .members(of: update.communityId, except: update.updatedBy), community: update.communityId,
                title: title, body: body, subject: nil, on: connection, logger: logger)
        }
    }
}
