import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Shared care reminders and their occurrences: read as the member under the wall, written
/// through the write path (the rows, their `change_log` entries for sync and realtime, the
/// audit entry of a deletion), then planned (occurrences ahead and their schedule rows) by the
/// horizon as the system, after the commit and before the response. A plan that did not happen
/// (the process died between) is made by the horizon's next pass, which sees the change.
struct CareStore: Sendable {
    let database: Database
    let writes: CommunityWrites
    let horizon: ReminderHorizon
    let logger: Logger

    static let order = Keyset(.oldestFirst, time: "r.created_at", id: "r.id")

    /// A reminder's row as the planner needs it.
    struct ReminderRow: Sendable {
        var id: UUID
        var communityId: UUID
        var recurrenceRule: String
        var timeOfDay: String
        var startsOn: String
        var timeZone: String
        var escalateAfterMinutes: Int?
        var createdBy: UUID?
        var createdAt: Date
        var deletedAt: Date?
    }

    static func reminderRow(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> ReminderRow?
    {
        for try await row in try await connection.query(
            """
            SELECT r.id, r.community_id, r.recurrence_rule, to_char(r.time_of_day, 'HH24:MI') AS time_of_day,
                   to_char(r.starts_on, 'YYYY-MM-DD') AS starts_on, coalesce(c.settings ->> 'timezone', 'UTC') AS time_zone,
                   r.escalate_after_minutes, r.created_by, r.created_at, r.deleted_at
            FROM care_reminders r JOIN communities c ON c.id = r.community_id
            WHERE r.id = \(id)
            """, logger: logger)
        {
            var cells = RowReader(row)
            return ReminderRow(
                id: try cells.next("id"), communityId: try cells.next("community_id"),
                recurrenceRule: try cells.next("recurrence_rule"), timeOfDay: try cells.next("time_of_day"),
                startsOn: try cells.next("starts_on"), timeZone: try cells.next("time_zone"),
                escalateAfterMinutes: try cells.next("escalate_after_minutes"), createdBy: try cells.next("created_by"),
                createdAt: try cells.next("created_at"), deletedAt: try cells.next("deleted_at"))
        }
        return nil
    }

    // MARK: Reading

    func list(in community: UUID, viewer: UUID, page: PageRequest) async throws -> [(CareReminder, PageCursor)] {
        try await database.transaction(userId: viewer) { connection in
            var found: [(CareReminder, PageCursor)] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: CareRows.reminderColumns)
                FROM care_reminders r JOIN communities c ON c.id = r.community_id
                WHERE r.community_id = \(community) AND r.deleted_at IS NULL
                \(page: page, in: Self.order)
                """, logger: logger)
            {
                let reminder = try CareRows.reminder(row)
                found.append((reminder, PageCursor(createdAt: reminder.createdAt, id: reminder.id)))
            }
            return found
        }
    }

    func reminder(_ id: UUID, in community: UUID, viewer: UUID) async throws -> CareReminder {
        try await database.transaction(userId: viewer) { connection in
            try await Self.reminder(id, in: community, on: connection, logger: logger)
        }
    }

    static func reminder(
        _ id: UUID, in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> CareReminder {
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: CareRows.reminderColumns)
            FROM care_reminders r JOIN communities c ON c.id = r.community_id
            WHERE r.id = \(id) AND r.community_id = \(community) AND r.deleted_at IS NULL
            """, logger: logger)
        {
            return try CareRows.reminder(row)
        }
        throw ReminderErrors.reminderNotFound
    }

    /// The occurrences falling on `from...through` (local dates), oldest first.
    func occurrences(
        of id: UUID, in community: UUID, viewer: UUID, from: String, through: String
    ) async throws -> [CareOccurrence] {
        try await database.transaction(userId: viewer) { connection in
            _ = try await Self.reminder(id, in: community, on: connection, logger: logger)
            var found: [CareOccurrence] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: CareRows.occurrenceColumns)
                FROM care_occurrences o JOIN care_reminders r ON r.id = o.reminder_id
                WHERE o.reminder_id = \(id) AND o.local_date BETWEEN \(from)::date AND \(through)::date
                ORDER BY o.local_date
                """, logger: logger)
            {
                found.append(try CareRows.occurrence(row))
            }
            return found
        }
    }

    // MARK: Writing

    func create(
        _ input: CareInput.Created, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> CareReminder
    {
        try CareSchedule.requireOccurs(
            input.recurrenceRule, from: input.startsOn, in: granted.record.settings.timezone)
        // Answered as written, read before the commit: a maker removed meanwhile could no longer
        // read it after.
        let reminder = try await writes.change(in: granted.communityId, by: granted.userId, request: request) {
            change, connection in
            try await Self.requireMember(input.assigneeId, of: granted.communityId, on: connection, logger: logger)
            var created: UUID?
            for try await id in try await connection.query(
                """
                INSERT INTO care_reminders (community_id, title, notes, recurrence_rule, time_of_day, starts_on,
                                            assignee_id, escalate_after_minutes, created_by)
                VALUES (\(granted.communityId), \(input.title), \(input.notes), \(input.recurrenceRule),
                        \(input.timeOfDay)::time, \(input.startsOn)::date, \(input.assigneeId), \(input.escalateAfterMinutes),
                        \(granted.userId))
                RETURNING id
                """, logger: logger
            ).decode(UUID.self) {
                created = id
            }
            guard let created else { throw APIError.forbidden }
            change.touched(1)
            return try await Self.reminder(created, in: granted.communityId, on: connection, logger: logger)
        }
        await horizon.planCareNow(reminder.id)
        return reminder
    }

    func update(
        _ id: UUID, _ patch: CareInput.Patch, granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> CareReminder {
        let reminder = try await writes.change(in: granted.communityId, by: granted.userId, request: request) {
            change, connection in
            let current = try await Self.reminder(id, in: granted.communityId, on: connection, logger: logger)
            if patch.recurrenceRule != nil || patch.startsOn != nil {
                try CareSchedule.requireOccurs(
                    patch.recurrenceRule ?? current.recurrenceRule, from: patch.startsOn ?? current.startsOn,
                    in: current.timeZone)
            }
            try await Self.requireMember(
                patch.assigneeId.value, of: granted.communityId, on: connection, logger: logger)
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE care_reminders SET
                        title = coalesce(\(patch.title), title),
                        notes = CASE WHEN \(patch.notes.tag) = 'keep' THEN notes ELSE \(patch.notes.value) END,
                        recurrence_rule = coalesce(\(patch.recurrenceRule), recurrence_rule),
                        time_of_day = coalesce(\(patch.timeOfDay)::time, time_of_day),
                        starts_on = coalesce(\(patch.startsOn)::date, starts_on),
                        assignee_id = CASE WHEN \(patch.assigneeId.tag) = 'keep' THEN assignee_id
                                           ELSE \(patch.assigneeId.value) END,
                        escalate_after_minutes = CASE WHEN \(patch.escalateAfterMinutes.tag) = 'keep'
                                                      THEN escalate_after_minutes
                                                      ELSE \(patch.escalateAfterMinutes.value) END
                    WHERE id = \(id) AND community_id = \(granted.communityId) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger))
            return try await Self.reminder(id, in: granted.communityId, on: connection, logger: logger)
        }
        await horizon.planCareNow(id)
        return reminder
    }

    /// Its creator or an admin; soft, so sync and the stream carry the deletion.
    func delete(_ id: UUID, granted: CommunityGate.Granted, request: RequestFacts) async throws {
        try await writes.change(in: granted.communityId, by: granted.userId, request: request) { change, connection in
            guard let row = try await Self.reminderRow(id, on: connection, logger: logger),
                row.communityId == granted.communityId, row.deletedAt == nil
            else { throw ReminderErrors.reminderNotFound }
            // A reminder whose creator's account is gone is an admin's to delete.
            try granted.require(
                .deleteReminder, on: OwnedContent(createdBy: row.createdBy ?? .random(), createdAt: row.createdAt))
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE care_reminders SET deleted_at = now()
                    WHERE id = \(id) AND deleted_at IS NULL RETURNING 1
                    """, logger: logger))
            change.audit("reminder.deleted", target: ("reminder", id), metadata: [:])
        }
        await horizon.planCareNow(id)
    }

    /// Marks, snoozes or reassigns one occurrence. Marking is compare-and-set: the first member
    /// wins, and the others get `409 OCCURRENCE_ALREADY_MARKED` saying who did it and when.
    func change(
        _ id: UUID, on date: String, _ patch: CareInput.OccurrencePatch, granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> CareOccurrence {
        let occurrence = try await writes.change(in: granted.communityId, by: granted.userId, request: request) {
            change, connection -> CareOccurrence in
            _ = try await Self.reminder(id, in: granted.communityId, on: connection, logger: logger)
            // The reminder's planning mark before the occurrence, in the planner's order (0080).
            try await connection.run("SELECT care_take_planning_mark(\(id))", logger: logger)
            guard let current = try await Self.occurrence(id, on: date, lock: true, on: connection, logger: logger)
            else {
                throw ReminderErrors.occurrenceNotFound
            }
            // Done is done: what was marked is not snoozed, reassigned or marked again.
            guard current.status == .pending else { throw ReminderErrors.alreadyMarked(current) }
            // A snooze puts it off: to after it falls due, never sooner (an occurrence days
            // ahead snoozed for two minutes would fall due for everyone then).
            if let until = patch.snoozeUntil, until <= current.dueAt {
                let due = JSONCoding.formatTimestamp(current.dueAt)
                throw APIError.validation(["snoozeUntil": "must be after the occurrence falls due (\(due))"])
            }
            try await Self.requireMember(
                patch.assigneeId.value, of: granted.communityId, on: connection, logger: logger)
            change.touched(
                try await connection.changedRows(
                    """
                    UPDATE care_occurrences SET
                        status = coalesce(\(patch.status?.rawValue), status),
                        completed_by = CASE WHEN \(patch.status != nil) THEN \(granted.userId) ELSE completed_by END,
                        completed_at = CASE WHEN \(patch.status != nil) THEN now() ELSE completed_at END,
                        snoozed_until = coalesce(\(patch.snoozeUntil), snoozed_until),
                        snoozes = snoozes + CASE WHEN \(patch.snoozeUntil != nil) THEN 1 ELSE 0 END,
                        assignee_id = CASE WHEN \(patch.assigneeId.tag) = 'keep' THEN assignee_id
                                           ELSE \(patch.assigneeId.value) END
                    WHERE reminder_id = \(id) AND local_date = \(date)::date
                    RETURNING 1
                    """, logger: logger))
            guard let updated = try await Self.occurrence(id, on: date, lock: false, on: connection, logger: logger)
            else { throw ReminderErrors.occurrenceNotFound }
            return updated
        }
        await horizon.planCareNow(id)
        return occurrence
    }

    static func occurrence(
        _ id: UUID, on date: String, lock: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> CareOccurrence? {
        for try await row in try await connection.query(
            """
            SELECT \(unescaped: CareRows.occurrenceColumns)
            FROM care_occurrences o JOIN care_reminders r ON r.id = o.reminder_id
            WHERE o.reminder_id = \(id) AND o.local_date = \(date)::date
            \(unescaped: lock ? "FOR UPDATE OF o" : "")
            """, logger: logger)
        {
            return try CareRows.occurrence(row)
        }
        return nil
    }
}

extension CareStore {
    /// An assignee is a current member, checked in the write's transaction: anyone else is
    /// refused on the field (the wall refuses them too).
    static func requireMember(
        _ user: UUID?, of community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let user else { return }
        for try await _ in try await connection.query(
            """
            SELECT 1 FROM members WHERE community_id = \(community) AND user_id = \(user) AND left_at IS NULL
            """, logger: logger)
        {
            return
        }
        throw APIError.validation(["assigneeId": "must be a member of this community"])
    }
}
