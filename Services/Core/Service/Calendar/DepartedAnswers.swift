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
/// (`calendar_withdraw_departed`, migration 0057, does nothing for another current member).
struct DepartedAnswers: Sendable {
    let events: EventRows
    let logger: Logger

    func withdraw(
        _ person: UUID, from community: UUID, communityName: String, change: inout ChangeRecord,
        on connection: PostgresConnection
    ) async throws {
        var withdrawn = 0
        var promoted: [(key: InstanceKey, userId: UUID, familyMemberId: UUID?)] = []
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
        var summaries: [InstanceKey: EventSummary] = [:]
        for promotion in promoted {
            let summary: EventSummary
            if let known = summaries[promotion.key] {
                summary = known
            } else {
                summary = try await self.summary(of: promotion.key, in: community, on: connection)
                summaries[promotion.key] = summary
            }
            change.announce(
                EventWaitlistPromoted(
                    communityId: community, communityName: communityName, event: summary, userId: promotion.userId,
                    familyMemberId: promotion.familyMemberId))
        }
    }

    /// The instance as a promotion names it: the series' instance (its override, if moved) or
    /// the single event.
    private func summary(
        of key: InstanceKey, in community: UUID, on connection: PostgresConnection
    ) async throws -> EventSummary {
        let stored = try await events.load(key.eventId, in: community, on: connection, logger: logger)
        guard let start = key.recurrenceId else { return stored.summary() }
        do {
            let (_, instance) = try await events.instance(
                of: stored, recurrenceId: start, on: connection, logger: logger)
            return (instance ?? stored.generated(at: start)).summary(recurrenceId: start, seriesId: stored.id)
        } catch let error as APIError where error.code == CalendarErrors.instanceNotFound.code {
            // An instance the series no longer makes: named as it was made.
            return stored.generated(at: start).summary(recurrenceId: start, seriesId: stored.id)
        }
    }
}
