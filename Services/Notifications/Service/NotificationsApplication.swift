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
        registerCalendar(&handlers)
    }

    /// The calendar's messages: members hear of new events, those who said they would come
    /// hear of changes and cancellations, and a waiting yes hears when a place opens.
    static func registerCalendar(_ handlers: inout MessageHandlers) {
        handlers.on(EventCreated.self) { envelope, connection, logger in
            let created = envelope.data
            try await CommunityNews.tell(
                .members(of: created.communityId, except: created.event.createdBy), community: created.communityId,
                type: created.rsvpRequested ? .rsvpRequest : .communityUpdate,
                title: "New in \(created.communityName): \(created.event.title)",
                body: created.rsvpRequested ? "Let them know if you are coming." : "It is in your calendar.",
                subject: nil, link: EventLink.data(created.event), on: connection, logger: logger)
        }
        handlers.on(EventUpdated.self) { envelope, connection, logger in
            let update = envelope.data
            let told = update.answeredUserIds.filter { $0 != update.updatedBy }
            let gone = update.changes.contains("cancelled") || update.changes.contains("deleted")
            guard !told.isEmpty, gone || update.changes.contains("time") || update.changes.contains("place")
            else { return }
            try await CommunityNews.tell(
                .users(told, of: update.communityId), community: update.communityId,
                title: gone ? "Cancelled: \(update.event.title)" : "Changed: \(update.event.title)",
                body: gone ? "It will not take place." : "Check the new time and place.", subject: nil,
                link: EventLink.data(update.event), on: connection, logger: logger)
        }
        // Answers reach organisers through attendance and sync; nobody is notified of each one.
        handlers.on(EventRSVPChanged.self) { _, _, _ in }
        handlers.on(EventWaitlistPromoted.self) { envelope, connection, logger in
            let promoted = envelope.data
            try await CommunityNews.tell(
                .users([promoted.userId], of: promoted.communityId), community: promoted.communityId,
                type: .rsvpRequest, title: "You have a place: \(promoted.event.title)",
                body: "A place opened up and you were next on the waitlist.", subject: nil,
                link: EventLink.data(promoted.event), on: connection, logger: logger)
        }
    }
}

/// The deep link a calendar notification carries: the event and, for an instance, its start.
enum EventLink {
    static func data(_ event: EventSummary) -> [String: JSONValue] {
        var data: [String: JSONValue] = ["eventId": .string(event.eventId.lowercasedString)]
        if let instance = event.recurrenceId { data["recurrenceId"] = .string(JSONCoding.formatTimestamp(instance)) }
        return data
    }
}
