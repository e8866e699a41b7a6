import Crypto
import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Fires what is due, exactly once across replicas: a batch of due `reminder_schedule` rows is
/// claimed `FOR UPDATE SKIP LOCKED` (the row locks are the lease: another replica skips them,
/// and a replica that dies mid-batch drops its connection, which rolls the batch back and frees
/// them), each row's reason is checked and its recipients worked out when it fires
/// (``ReminderReasons``), and the `reminder.due` messages are written to the outbox in the
/// transaction that marks the rows fired. A message's id is derived from (kind, subject,
/// occurrence, step), and notification rows are unique per (message, user): a recipient hears
/// one reminder once.
struct ReminderFiring: Sendable {
    let database: Database
    let logger: Logger
    /// Rows claimed per transaction.
    var batchSize = 1_000

    struct Claimed: Sendable {
        var id: Int
        var communityId: UUID
        var communityName: String
        var kind: ReminderKind
        var subjectId: UUID
        var occurrence: String
        var step: Int
        var dueAt: Date
        var instanceStart: Date?
    }

    /// What one claimed row turned out to be when it fired.
    struct Fired: Sendable {
        var message: ReminderDue?
        var outcome: String
    }

    /// A row whose event changed since it was planned waits this long for its new plan.
    static let staleDelay = 30
    /// A row that failed alone for a reason of the moment waits this long (seconds).
    static let momentaryDelay = 60

    /// What one batch did: the rows it claimed, and when nothing was due, how long until the
    /// next row falls due by PostgreSQL's clock, the one the claim compares with (nil: none
    /// is planned).
    struct Batch: Sendable {
        var claimed: Int
        var nextDueIn: Duration? = nil
    }

    /// Fires one batch of what is due (PostgreSQL's clock), or only the row `row` if it is still
    /// due and no one holds it. With nothing due, reads when the next row falls due in the same
    /// transaction: `reminder_schedule` is the system's (its policy
    /// shows no row outside a system transaction).
    func fireBatch(limit: Int? = nil, only row: Int? = nil) async throws -> Batch {
        try await database.transaction(scope: .system) { connection in
            let claimed = try await claim(limit: limit ?? batchSize, only: row, on: connection)
            guard !claimed.isEmpty else { return Batch(claimed: 0, nextDueIn: try await nextDueIn(on: connection)) }
            let firedAt = Date()
            var fired: [Int: Fired] = [:]
            var stale: [Int] = []
            for (kind, rows) in Dictionary(grouping: claimed, by: \.kind) {
                let reasons = try await ReminderReasons.read(kind, rows.map(\.id), on: connection, logger: logger)
                for row in rows {
                    if reasons[row.id]?.stale == true {
                        stale.append(row.id)
                    } else {
                        fired[row.id] = Self.fire(row, reason: reasons[row.id], at: firedAt)
                    }
                }
            }
            let messages = claimed.compactMap { fired[$0.id]?.message }.map { message in
                MessageEnvelope(
                    id: Self.messageId(message), occurredAt: firedAt, communityId: message.communityId, actorId: nil,
                    data: message)
            }
            try await Outbox.enqueue(all: messages, to: .notifications, on: connection, logger: logger)
            let done = claimed.filter { fired[$0.id] != nil }
            try await connection.run(
                """
                UPDATE reminder_schedule s SET fired_at = \(firedAt), outcome = f.outcome, recipients = f.recipients
                FROM unnest(\(done.map(\.id))::bigint[], \(done.map { fired[$0.id]?.outcome ?? "gone" })::text[],
                            \(done.map { fired[$0.id]?.message?.recipients.count ?? 0 })::int[]) AS f(id, outcome, recipients)
                WHERE s.id = f.id
                """, logger: logger)
            if !stale.isEmpty {
                try await connection.run(
                    """
                    UPDATE reminder_schedule SET due_at = now() + \(Self.staleDelay) * interval '1 second'
                    WHERE id = ANY(\(stale)::bigint[])
                    """, logger: logger)
            }
            return Batch(claimed: claimed.count)
        }
    }

    /// The first due row, fired alone after its batch failed with a database error: if it fails
    /// alone too, that row and no other is marked `failed` (and logged) so the rows behind it go
    /// on firing; whether it was given up. A failure that is the moment's rather than the row's
    /// (``Database/isPassing(_:)``: a timeout, a lock or deadlock, a shutdown) gives up
    /// nothing: the row waits ``momentaryDelay`` (so a row that always times out does not hold
    /// back the others) and the failure is thrown, for the scheduler to back off.
    @discardableResult
    func isolateFailure() async throws -> Bool {
        // The row is named before it is fired: the one given up is the one that failed, not
        // whichever is first when the give-up runs (another replica may hold it by then, or a
        // row due at the same moment come first).
        let first = try await database.transaction(scope: .system) { connection -> Int? in
            for try await id in try await connection.query(
                """
                SELECT id FROM reminder_schedule WHERE fired_at IS NULL AND due_at <= now()
                ORDER BY due_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
                """, logger: logger
            ).decode(Int.self) {
                return id
            }
            return nil
        }
        guard let first else { return false }
        do {
            _ = try await fireBatch(limit: 1, only: first)
            return false
        } catch let error as PSQLError where error.serverInfo != nil && Database.isPassing(error) {
            try await database.transaction(scope: .system) { connection in
                try await connection.run(
                    """
                    UPDATE reminder_schedule SET due_at = now() + \(Self.momentaryDelay) * interval '1 second'
                    WHERE id = \(first) AND fired_at IS NULL
                    """, logger: logger)
            }
            logger.warning(
                "a reminder failed alone for a reason of the moment; it waits and is tried again",
                metadata: [
                    "row": "\(first)", "retryInSeconds": "\(Self.momentaryDelay)",
                    "error": .string(logDescription(of: error)),
                ])
            throw error
        } catch let error as PSQLError where error.serverInfo != nil {
            try await database.transaction(scope: .system) { connection in
                try await connection.run(
                    """
                    UPDATE reminder_schedule SET fired_at = now(), outcome = 'failed'
                    WHERE id = \(first) AND fired_at IS NULL
                    """, logger: logger)
            }
            logger.error(
                "a reminder could not be fired and was given up",
                metadata: ["row": "\(first)", "error": .string(logDescription(of: error))])
            return true
        }
    }

    /// Rows of a kind this build does not know are given up (a newer build wrote them; it will
    /// not be rolled back to), so the others fire.
    func isolateUnknown() async throws {
        let kinds = ReminderKind.allCases.map(\.rawValue)
        try await database.transaction(scope: .system) { connection in
            try await connection.run(
                """
                UPDATE reminder_schedule SET fired_at = now(), outcome = 'failed'
                WHERE fired_at IS NULL AND due_at <= now() AND NOT (kind = ANY(\(kinds)::text[]))
                """, logger: logger)
        }
        logger.error("reminders of an unknown kind were given up")
    }

    /// How long until the next unfired row falls due (due already: zero); nil when none is planned.
    func nextDueIn(on connection: PostgresConnection) async throws -> Duration? {
        for try await milliseconds in try await connection.query(
            """
            SELECT (extract(epoch FROM min(due_at) - clock_timestamp()) * 1000)::bigint
            FROM reminder_schedule WHERE fired_at IS NULL
            """, logger: logger
        ).decode(Int64?.self) {
            // Not `greatest(0, …)` in SQL: PostgreSQL's greatest leaves out a NULL, so with no
            // row planned it said 0 (due now), and an idle scheduler went round every 50 ms.
            return milliseconds.map { .milliseconds(max(0, $0)) }
        }
        return nil
    }

    private func claim(limit: Int, only row: Int?, on connection: PostgresConnection) async throws -> [Claimed] {
        var claimed: [Claimed] = []
        for try await row in try await connection.query(
            """
            SELECT s.id, s.community_id, c.name, s.kind, s.subject_id, s.occurrence, s.step, s.due_at, s.instance_start
            FROM reminder_schedule s JOIN communities c ON c.id = s.community_id
            WHERE s.fired_at IS NULL AND s.due_at <= now() AND (\(row)::bigint IS NULL OR s.id = \(row))
            ORDER BY s.due_at, s.id
            LIMIT \(limit)
            FOR UPDATE OF s SKIP LOCKED
            """, logger: logger)
        {
            var cells = RowReader(row)
            let id: Int = try cells.next("id")
            let community: UUID = try cells.next("community_id")
            let name: String = try cells.next("name")
            let text: String = try cells.next("kind")
            guard let kind = ReminderKind(rawValue: text) else { throw ReminderReasons.UnknownKind(kind: text) }
            claimed.append(
                Claimed(
                    id: id, communityId: community, communityName: name, kind: kind,
                    subjectId: try cells.next("subject_id"), occurrence: try cells.next("occurrence"),
                    step: try cells.next("step"), dueAt: try cells.next("due_at"),
                    instanceStart: try cells.next("instance_start")))
        }
        return claimed
    }

    static func fire(_ row: Claimed, reason: ReminderReasons.Reason?, at firedAt: Date) -> Fired {
        guard let reason else { return Fired(message: nil, outcome: "gone") }
        guard !reason.recipients.isEmpty else { return Fired(message: nil, outcome: "nobody") }
        var message = ReminderDue(
            kind: row.kind, communityId: row.communityId, communityName: row.communityName, subjectId: row.subjectId,
            occurrence: row.occurrence, step: row.step, recipients: reason.recipients, title: reason.title,
            dueAt: row.dueAt, firedAt: firedAt)
        message.startsAt = row.instanceStart
        message.allDay = reason.allDay
        message.timeZone = reason.timeZone
        message.answers = reason.answers
        message.amount = reason.amount
        message.currency = reason.currency
        message.occurrenceId = reason.occurrenceId
        if row.kind == .eventReminder || row.kind == .rsvpNudge || row.kind == .rsvpSummary {
            message.recurrenceId = ReminderRows.instant(row.occurrence)
        }
        return Fired(message: message, outcome: "sent")
    }

    /// A name-based id (SHA-256 of the row's key, as a version 8 UUID): the same reminder is
    /// always the same message.
    static func messageId(_ message: ReminderDue) -> UUID {
        let key = "\(message.kind.rawValue)|\(message.subjectId.lowercasedString)|\(message.occurrence)|\(message.step)"
        var bytes = Array(SHA256.hash(data: Data(key.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
