import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization

/// Keeps the schedule filled `horizon` ahead (60 days), not further: a daily reminder is about
/// 60 rows, not a row per day forever. Each subject (an event series or single event, dues, a
/// care reminder) is planned again whenever it changes (a message from core, a care reminder's
/// edit) and once a day as its horizon moves (``fill(discovering:)``, a periodic job). Planning a
/// subject first locks its `reminder_subjects` row, so two planners of one subject (a message
/// and the pass, two replicas) take turns, the second reading what the first committed.
struct ReminderHorizon: Sendable {
    let database: Database
    let logger: Logger
    let wakeups: SchedulerWakeups
    var horizon: TimeInterval = ReminderDefaults.horizon

    /// The scheduler looks again now: something this process committed may be due sooner.
    func wake() { wakeups.wake() }

    /// The scheduler looks again in a moment: a message handler plans inside the inbox's
    /// transaction, which commits after it returns.
    func wakeSoon() { wakeups.wake(after: .milliseconds(200)) }

    // MARK: The pass

    /// Plans the subjects whose horizon is less than a day from running out, or that a member's
    /// change marked (`care_needs_planning`), a batch at a time, each in its own transaction,
    /// claimed with `SKIP LOCKED` so replicas share the work; with `discovering`, first adds the
    /// events, dues and care reminders that have no subject yet (what existed before this
    /// service did). Returns how many were planned.
    @discardableResult
    func fill(discovering: Bool = false, limit: Int = 200) async throws -> Int {
        if discovering {
            try await database.transaction(scope: .system) { connection in
                try await discover(on: connection)
            }
        }
        var planned = 0
        while true {
            let count = try await database.transaction(scope: .system) { connection -> Int in
                var subjects: [(String, UUID, UUID)] = []
                for try await row in try await connection.query(
                    """
                    SELECT kind, subject_id, community_id FROM reminder_subjects
                    WHERE filled_until < now() + \(horizon - 86_400) * interval '1 second'
                    ORDER BY filled_until
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                    """, logger: logger
                ).decode((String, UUID, UUID).self) {
                    subjects.append(row)
                }
                var settings = CommunityReminders.Known()
                for (kind, subject, community) in subjects {
                    try await plan(
                        kind: kind, subject: subject, community: community, settings: &settings, on: connection)
                }
                return subjects.count
            }
            planned += count
            if count < limit { break }
        }
        if planned > 0 { wake() }
        try await prune()
        return planned
    }

    /// Live events that have not ended, active dues and care reminders with no subject yet.
    /// Their rows are made in ascending id, the order every planner of several subjects takes
    /// them in (``community(_:on:)``, ``eventsChanged(in:on:)``): made in storage order, the look
    /// could hold a higher one while waiting for a lower one a planner held, and the planner wait
    /// for the higher one. `community` limits the look to one (a test's, on a database others
    /// share).
    func discover(on connection: PostgresConnection, in community: UUID? = nil) async throws {
        try await connection.run(
            """
            INSERT INTO reminder_subjects (kind, subject_id, community_id)
            SELECT kind, subject_id, community_id FROM (
            SELECT 'event' AS kind, e.id AS subject_id, e.community_id FROM events e
            WHERE e.recurrence_parent_id IS NULL AND e.deleted_at IS NULL AND e.cancelled_at IS NULL
              AND (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at ELSE coalesce(e.recurrence_end, 'infinity') END) > now()
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'event' AND s.subject_id = e.id)
            UNION ALL
            SELECT 'dues', d.id, d.community_id FROM dues d
            WHERE d.deleted_at IS NULL AND d.is_active
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'dues' AND s.subject_id = d.id)
            UNION ALL
            SELECT 'care', r.id, r.community_id FROM care_reminders r
            WHERE r.deleted_at IS NULL
              AND NOT EXISTS (SELECT 1 FROM reminder_subjects s WHERE s.kind = 'care' AND s.subject_id = r.id)
            ) unplanned
            WHERE \(community)::uuid IS NULL OR community_id = \(community)
            ORDER BY subject_id
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// What nobody needs any more: rows fired more than 30 days ago (their messages went long
    /// ago; the notifications keep the history), occurrences older than 90 days, and the
    /// horizon entries of events that have ended (nothing of theirs can fall due again).
    func prune() async throws {
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                """
                DELETE FROM reminder_schedule
                WHERE id IN (SELECT id FROM reminder_schedule WHERE fired_at < now() - interval '30 days' LIMIT 10000)
                """, logger: logger)
            try await connection.run(
                """
                DELETE FROM care_occurrences
                WHERE id IN (SELECT id FROM care_occurrences WHERE due_at < now() - interval '90 days' LIMIT 10000)
                """, logger: logger)
            try await connection.run(
                """
                DELETE FROM reminder_subjects s USING events e
                WHERE s.kind = 'event' AND e.id = s.subject_id
                  AND (CASE WHEN e.recurrence_rule IS NULL THEN e.starts_at
                            ELSE coalesce(e.recurrence_end, 'infinity') END) < now() - interval '2 days'
                  AND NOT EXISTS (SELECT 1 FROM reminder_schedule r WHERE r.subject_id = s.subject_id AND r.fired_at IS NULL)
                """, logger: logger)
        }
    }

    func plan(
        kind: String, subject: UUID, community: UUID, settings: inout CommunityReminders.Known,
        on connection: PostgresConnection
    ) async throws {
        switch kind {
        case "event": try await planEvent(subject, settings: &settings, on: connection)
        case "dues": try await planDues(subject, settings: &settings, on: connection)
        default: try await planCare(subject, on: connection)
        }
    }

    /// Everything a community has, planned again (its settings changed).
    func community(_ community: UUID, on connection: PostgresConnection) async throws {
        var subjects: [(String, UUID)] = []
        for try await row in try await connection.query(
            "SELECT kind, subject_id FROM reminder_subjects WHERE community_id = \(community) ORDER BY subject_id",
            logger: logger
        ).decode((String, UUID).self) {
            subjects.append(row)
        }
        var settings = CommunityReminders.Known()
        for (kind, subject) in subjects {
            try await plan(kind: kind, subject: subject, community: community, settings: &settings, on: connection)
        }
    }

    /// Where planning a subject starts: its community, read from `table`, with the subject's
    /// lock then held, so that what the planner reads next is as the last planner before it
    /// committed; nil, with the subject's rows forgotten, for a subject that is gone.
    func lockedCommunity(
        of kind: String, _ subject: UUID, in table: PlannedTable, on connection: PostgresConnection
    ) async throws -> UUID? {
        var community: UUID?
        for try await found in try await connection.query(
            "SELECT community_id FROM \(unescaped: table.rawValue) WHERE id = \(subject)", logger: logger
        ).decode(UUID.self) {
            community = found
        }
        guard let community else {
            try await ReminderRows.forget(subject: subject, subjectKind: kind, on: connection, logger: logger)
            return nil
        }
        try await lock(kind, subject, community: community, on: connection)
        return community
    }

    /// The tables whose rows are planned subjects.
    enum PlannedTable: String {
        case events
        case dues
        case careReminders = "care_reminders"
    }

    /// Takes the subject's planning lock (its row, made if it is new) for this transaction.
    func lock(_ kind: String, _ subject: UUID, community: UUID, on connection: PostgresConnection) async throws {
        try await connection.run(
            """
            INSERT INTO reminder_subjects (kind, subject_id, community_id) VALUES (\(kind), \(subject), \(community))
            ON CONFLICT (kind, subject_id) DO NOTHING
            """, logger: logger)
        try await connection.run(
            "SELECT 1 FROM reminder_subjects WHERE kind = \(kind) AND subject_id = \(subject) FOR UPDATE",
            logger: logger)
    }
}

/// What a community's settings and members ask of reminders.
struct CommunityReminders: Sendable {
    /// Every event reminder lead time in use, in minutes: the community's default and members' own.
    var leads: [Int]
    var nudgeHours: Int
    var duesDays: [Int]
    var timeZone: String
    var maxLead: Int { max(leads.max() ?? 0, nudgeHours * 60, ReminderDefaults.summaryHours * 60) }

    /// Read once per community in a planning transaction.
    struct Known: Sendable {
        var byCommunity: [UUID: CommunityReminders] = [:]
    }

    static func read(
        _ community: UUID, known: inout Known, on connection: PostgresConnection, logger: Logger
    ) async throws -> CommunityReminders {
        if let cached = known.byCommunity[community] { return cached }
        var found = CommunityReminders(leads: [], nudgeHours: 0, duesDays: [], timeZone: "UTC")
        for try await row in try await connection.query(
            """
            SELECT c.settings::text AS settings,
                   ARRAY(SELECT DISTINCT jsonb_array_elements_text(m.notification_prefs -> 'eventReminderMinutes')::int
                         FROM members m
                         WHERE m.community_id = c.id AND m.left_at IS NULL
                           AND jsonb_typeof(m.notification_prefs -> 'eventReminderMinutes') = 'array') AS leads
            FROM communities c WHERE c.id = \(community)
            """, logger: logger)
        {
            var cells = RowReader(row)
            let text: String = try cells.next("settings")
            let own: [Int] = try cells.next("leads")
            let settings = (try? JSONCoding.decoder.decode(CommunitySettings.self, from: Data(text.utf8))) ?? .default
            let fallback = settings.defaultReminderHours > 0 ? [settings.defaultReminderHours * 60] : []
            found = CommunityReminders(
                leads: Array(Set(own + fallback)).filter { $0 > 0 && $0 <= ReminderDefaults.maxLeadMinutes }.sorted(),
                nudgeHours: settings.rsvpNudgeHours, duesDays: settings.duesReminderDays, timeZone: settings.timezone)
        }
        known.byCommunity[community] = found
        return found
    }
}

/// How the scheduler is woken: now, or a moment from now (a handler's transaction has not
/// committed yet). The scheduler waits on it between rounds (``wait(until:)``), asleep until a
/// wake-up comes due or its own next round.
final class SchedulerWakeups: Sendable {
    private let due = Mutex<ContinuousClock.Instant?>(nil)
    private let bell = Doorbell()

    func wake(after delay: Duration = .zero) {
        let at = ContinuousClock.now + delay
        due.withLock { current in current = min(current ?? at, at) }
        bell.ring()
    }

    /// Whether a wake-up has come due; it is used up.
    func take() -> Bool {
        due.withLock { current in
            guard let at = current, at <= ContinuousClock.now else { return false }
            current = nil
            return true
        }
    }

    /// Waits until `deadline` or until a wake-up comes due, whichever is first: true for a
    /// wake-up (used up), false at the deadline or on cancellation.
    func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        while !Task.isCancelled {
            if take() { return true }
            guard ContinuousClock.now < deadline else { return false }
            // A wake-up recorded after this read rings the bell, which ends the wait early.
            let next = min(deadline, due.withLock { $0 } ?? deadline)
            _ = await bell.wait(until: next)
        }
        return false
    }
}
