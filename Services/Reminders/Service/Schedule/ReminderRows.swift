import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A row a subject should have in `reminder_schedule`.
struct PlannedReminder: Sendable, Equatable {
    var kind: ReminderKind
    var occurrence: String
    var step: Int
    var dueAt: Date
    var instanceStart: Date? = nil
}

/// Writes a subject's planned rows: adds what is new, moves what moved, removes what is no
/// longer planned, and never touches a row that fired. A planned row already past is added
/// only if it existed (a move of a row that was waiting): a reminder for an event created
/// after its lead time had passed is not sent late.
enum ReminderRows {
    static func replace(
        _ planned: [PlannedReminder], subject: UUID, subjectKind: String, community: UUID, filledUntil: Date,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let kinds = planned.map(\.kind.rawValue)
        let occurrences = planned.map(\.occurrence)
        let steps = planned.map(\.step)
        let due = planned.map(\.dueAt)
        // No optional arrays: an instance start is the due time where there is none.
        let starts = planned.map { $0.instanceStart ?? $0.dueAt }
        let hasStart = planned.map { $0.instanceStart != nil }
        try await connection.run(
            """
            WITH planned AS (
                SELECT * FROM unnest(\(kinds)::text[], \(occurrences)::text[], \(steps)::int[], \(due)::timestamptz[],
                                     \(starts)::timestamptz[], \(hasStart)::bool[])
                    AS p(kind, occurrence, step, due_at, instance_start, has_start)
            ),
            removed AS (
                DELETE FROM reminder_schedule s
                WHERE s.subject_id = \(subject) AND s.fired_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM planned p
                                  WHERE p.kind = s.kind AND p.occurrence = s.occurrence AND p.step = s.step)
            )
            INSERT INTO reminder_schedule (community_id, kind, subject_id, occurrence, step, due_at, instance_start)
            SELECT \(community), p.kind, \(subject), p.occurrence, p.step, p.due_at,
                   CASE WHEN p.has_start THEN p.instance_start END
            FROM planned p
            WHERE p.due_at > now()
               OR EXISTS (SELECT 1 FROM reminder_schedule s
                          WHERE s.kind = p.kind AND s.subject_id = \(subject) AND s.occurrence = p.occurrence
                            AND s.step = p.step)
            ON CONFLICT (kind, subject_id, occurrence, step) DO UPDATE
                SET due_at = EXCLUDED.due_at, instance_start = EXCLUDED.instance_start
                WHERE reminder_schedule.fired_at IS NULL
                  AND (reminder_schedule.due_at, reminder_schedule.instance_start)
                      IS DISTINCT FROM (EXCLUDED.due_at, EXCLUDED.instance_start)
            """, logger: logger)
        try await connection.run(
            """
            INSERT INTO reminder_subjects (kind, subject_id, community_id, filled_until, planned_at)
            VALUES (\(subjectKind), \(subject), \(community), \(filledUntil), now())
            ON CONFLICT (kind, subject_id) DO UPDATE SET filled_until = EXCLUDED.filled_until, planned_at = now()
            """, logger: logger)
    }

    /// A subject that is gone (deleted): its waiting rows and its horizon entry go.
    static func forget(
        subject: UUID, subjectKind: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.run(
            "DELETE FROM reminder_schedule WHERE subject_id = \(subject) AND fired_at IS NULL", logger: logger)
        try await connection.run(
            "DELETE FROM reminder_subjects WHERE kind = \(subjectKind) AND subject_id = \(subject)", logger: logger)
    }

    /// An instance's key: its original start as `2026-11-28T18:00:00Z`.
    static func key(_ instant: Date) -> String { JSONCoding.formatTimestamp(instant) }

    static func instant(_ key: String) -> Date? { JSONCoding.parseTimestamp(key) }
}
