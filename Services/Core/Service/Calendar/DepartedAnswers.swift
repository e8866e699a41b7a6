import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// When a membership ends (leaving, removal, a deleted account): the person's answers to
/// instances still to come, theirs and their dependants', are withdrawn, and the next in line
/// takes each seat they held, told as any promotion is (`event.waitlist_promoted`). Answers to
/// what has started or is over stay. Call in the transaction that ends the membership: just
/// before it for a member leaving (who may then still read the events), after it otherwise
/// (`calendar_withdraw_departed`, migrations 0057 to 0059: nothing for another current member or
/// for a caller outside the community; it waits for the person's answers in flight).
struct DepartedAnswers: Sendable {
    let events: EventRows
    let logger: Logger

    func withdraw(
        _ person: UUID, from community: UUID, communityName: String, change: inout ChangeRecord,
        on connection: PostgresConnection
    ) async throws {
        var withdrawn = 0
        var promoted: [Promotion] = []
        for try await (eventId, recurrenceId, userId, familyMemberId, isPromotion) in try await connection.query(
            """
            SELECT event_id, recurrence_id, user_id, family_member_id, promoted
            FROM calendar_withdraw_departed(\(community), \(person))
            """, logger: logger
        ).decode((UUID, Date?, UUID, UUID?, Bool).self) {
            if isPromotion {
                promoted.append((InstanceKey(eventId: eventId, recurrenceId: recurrenceId), userId, familyMemberId))
            } else {
                withdrawn += 1
            }
        }
        change.touched(withdrawn + promoted.count)
        try await announce(promoted, in: community, communityName: communityName, change: &change, on: connection)
    }

    /// A family member being deleted gives up its seats at what is still to come, in every
    /// community (`calendar_withdraw_dependant`, migration 0074: nothing unless the caller is its
    /// guardian). Call in the transaction that deletes it, before the deletion.
    func withdraw(dependant: UUID, into account: inout AccountChange, on connection: PostgresConnection) async throws {
        var changes: [UUID: (name: String, withdrawn: Int, promoted: [Promotion])] = [:]
        var order: [UUID] = []
        for try await (community, name, eventId, recurrenceId, userId, familyMemberId, isPromotion)
            in try await connection.query(
                """
                SELECT community_id, community_name, event_id, recurrence_id, user_id, family_member_id, promoted
                FROM calendar_withdraw_dependant(\(dependant))
                """, logger: logger
            ).decode((UUID, String, UUID, Date?, UUID, UUID?, Bool).self)
        {
            if changes[community] == nil { order.append(community) }
            changes[community, default: (name, 0, [])].withdrawn += isPromotion ? 0 : 1
            if isPromotion {
                changes[community]?.promoted.append(
                    (InstanceKey(eventId: eventId, recurrenceId: recurrenceId), userId, familyMemberId))
            }
        }
        for community in order {
            guard let (name, withdrawn, promoted) = changes[community] else { continue }
            var change = ChangeRecord(community: community)
            change.touched(withdrawn + promoted.count)
            try await announce(promoted, in: community, communityName: name, change: &change, on: connection)
            account.include(change)
        }
    }

    private typealias Promotion = (key: InstanceKey, userId: UUID, familyMemberId: UUID?)

    /// Tells each one promoted, at the instance as an answer to it reads it; one cancelled (or
    /// removed) is no place to be told of.
    private func announce(
        _ promoted: [Promotion], in community: UUID, communityName: String, change: inout ChangeRecord,
        on connection: PostgresConnection
    ) async throws {
        var instances: [InstanceKey: EventRecord?] = [:]
        for promotion in promoted {
            if instances[promotion.key] == nil {
                instances[promotion.key] = try await instance(promotion.key, in: community, on: connection)
            }
            guard let instance = instances[promotion.key] ?? nil, !instance.cancelled else { continue }
            change.announce(
                EventWaitlistPromoted(
                    communityId: community, communityName: communityName,
                    event: instance.summary(recurrenceId: promotion.key.recurrenceId, seriesId: promotion.key.eventId),
                    userId: promotion.userId, familyMemberId: promotion.familyMemberId))
        }
    }

    /// The instance as ``RSVPStore/instance(_:recurrenceId:in:events:on:logger:)`` reads it for an
    /// answer (cancelled when its series or itself was); nil for one its series no longer makes.
    private func instance(
        _ key: InstanceKey, in community: UUID, on connection: PostgresConnection
    ) async throws -> EventRecord? {
        do {
            return try await RSVPStore.instance(
                key.eventId, recurrenceId: key.recurrenceId, in: community, events: events, on: connection,
                logger: logger
            ).1
        } catch let error as APIError
            where [CalendarErrors.instanceNotFound.code, CalendarErrors.eventNotFound.code].contains(error.code)
        {
            return nil
        }
    }
}
