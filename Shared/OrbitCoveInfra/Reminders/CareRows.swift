import Foundation
import OrbitCoveModels
import PostgresNIO

/// The `care_reminders` and `care_occurrences` columns every reader selects, and how a row
/// becomes a ``CareReminder`` or ``CareOccurrence``: the reminders service's store and core's
/// sync read them the same way.
///
/// ```swift
/// SELECT \(unescaped: CareRows.reminderColumns) FROM care_reminders r JOIN communities c ON ...
/// ```
package enum CareRows {
    /// Needs `care_reminders r` and `communities c` (the zone is the community's).
    package static let reminderColumns = """
        r.id, r.community_id, r.title, r.notes, r.recurrence_rule, to_char(r.time_of_day, 'HH24:MI') AS time_of_day,
        to_char(r.starts_on, 'YYYY-MM-DD') AS starts_on, coalesce(c.settings ->> 'timezone', 'UTC') AS time_zone,
        \(assignee("r.assignee_id")) AS assignee_id, r.escalate_after_minutes, r.created_by, r.created_at,
        r.updated_at
        """

    /// Needs `care_occurrences o` and `care_reminders r`.
    package static let occurrenceColumns = """
        o.id, o.reminder_id, o.community_id, to_char(o.local_date, 'YYYY-MM-DD') AS local_date, o.due_at, o.status,
        o.completed_by, o.completed_at, o.snoozed_until,
        \(assignee("coalesce(o.assignee_id, r.assignee_id)")) AS assignee_id, o.assignee_id IS NOT NULL AS reassigned,
        o.updated_at
        """

    /// `column`, the assignee, while they are a member of the reminder's community: one who left
    /// is no one's to show (the reminder then goes to everyone, as one without an assignee; a
    /// hostile probe found the departed member's id still shown).
    private static func assignee(_ column: String) -> String {
        """
        CASE WHEN EXISTS (SELECT 1 FROM members m WHERE m.community_id = r.community_id AND m.user_id = \(column)
                          AND m.left_at IS NULL) THEN \(column) END
        """
    }

    package static func reminder(_ row: PostgresRow) throws -> CareReminder {
        var cells = RowReader(row)
        return CareReminder(
            id: try cells.next("id"), communityId: try cells.next("community_id"), title: try cells.next("title"),
            notes: try cells.next("notes"), recurrenceRule: try cells.next("recurrence_rule"),
            timeOfDay: try cells.next("time_of_day"), startsOn: try cells.next("starts_on"),
            timeZone: try cells.next("time_zone"), assigneeId: try cells.next("assignee_id"),
            escalateAfterMinutes: try cells.next("escalate_after_minutes"), createdBy: try cells.next("created_by"),
            createdAt: try cells.next("created_at"), updatedAt: try cells.next("updated_at"))
    }

    package static func occurrence(_ row: PostgresRow) throws -> CareOccurrence {
        var cells = RowReader(row)
        let id: UUID = try cells.next("id")
        let reminder: UUID = try cells.next("reminder_id")
        let community: UUID = try cells.next("community_id")
        let date: String = try cells.next("local_date")
        let dueAt: Date = try cells.next("due_at")
        let status: String = try cells.next("status")
        return CareOccurrence(
            id: id, reminderId: reminder, communityId: community, date: date, dueAt: dueAt,
            status: CareOccurrenceStatus(rawValue: status) ?? .pending, completedBy: try cells.next("completed_by"),
            completedAt: try cells.next("completed_at"), snoozedUntil: try cells.next("snoozed_until"),
            assigneeId: try cells.next("assignee_id"), reassigned: try cells.next("reassigned"),
            updatedAt: try cells.next("updated_at"))
    }
}
