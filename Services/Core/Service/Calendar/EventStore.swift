import Foundation
import Logging
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Reading the calendar: a window of instances, one event or instance, and the answers to
/// them. Everything runs as the caller, under row-level security.
package struct EventStore: Sendable {
    let database: Database
    let events: EventRows
    let expansions: KnownExpansions
    let windows: KnownWindows
    let logger: Logger

    package init(
        database: Database, events: EventRows, expansions: KnownExpansions, windows: KnownWindows, logger: Logger
    ) {
        self.database = database
        self.events = events
        self.expansions = expansions
        self.windows = windows
        self.logger = logger
    }

    /// The longest window a read may ask for.
    static let longestWindow: TimeInterval = 400 * 86_400

    /// Every instance overlapping `window` the caller is shown, with their answers and each
    /// one's counts, as JSON (a reader's copy is sent as it is kept: ``Response/data(json:requestId:)``).
    package func window(_ window: Range<Date>, in community: UUID, viewer: UUID) async throws -> ByteBuffer {
        try await database.transaction(userId: viewer) { connection in
            // As far back as an instance can start and still run into the window: the longest
            // event, and the day `EventRecord.instanceReach` adds for a change of clocks.
            let reach = window.lowerBound.addingTimeInterval(-EventInput.longest - 86_400)
            switch try await candidates(
                in: community, window: window, reach: reach, kept: windows.kept(in: community, over: window),
                on: connection)
            {
            case .kept(let kept):
                windows.taken()
                let answers = kept.answers
                let records = try await Self.answerRecords(
                    to: answers.ids, from: answers.from, before: answers.before, viewer: viewer, on: connection,
                    logger: logger)
                if let copy = windows.copy(of: kept, for: viewer, from: records, in: community, over: window) {
                    return copy
                }
                let json = ByteBuffer(bytes: try kept.rendered.json(rows: try records.rows()).bytes)
                windows.keep(
                    KnownWindows.ReaderCopy(records: records.bytes, json: json), of: kept, for: viewer,
                    in: community, over: window)
                return json
            case .rows(var rows, var digest):
                // An instance moved into the window from beyond its series' reach (a series that
                // ended, or starts, outside it) is shown through its series, which the candidates
                // did not include: read those series by id (rarely any). The digest does not
                // cover them, so such a window is not kept by it.
                let series = Set(rows.lazy.filter(\.record.isSeries).map(\.record.id))
                let absent = Set(rows.lazy.compactMap(\.record.parentId)).subtracting(series)
                if !absent.isEmpty {
                    rows += try await events.rows(Array(absent), in: community, on: connection, logger: logger)
                    digest = nil
                }
                let answers = AnswerReach(rows, window: window)
                let rendered = try windows.rendered(
                    of: rows, digest: digest, answers: answers, in: community, over: window
                ) {
                    RenderedWindow(
                        try EventWindow(window: window, limit: EventWindow.tooBusy, expansions: expansions)
                            .instances(of: rows),
                        limit: EventWindow.tooBusy)
                }
                return ByteBuffer(
                    bytes: try rendered.json(
                        rows: try await Self.answerRows(to: answers, viewer: viewer, on: connection, logger: logger)
                    ).bytes)
            }
        }
    }

    /// What a window read found: the kept window, its rows unchanged, or the rows themselves
    /// (with the digest of their versions, nil when they are not all from one statement).
    private enum Candidates {
        case kept(KnownWindows.Kept)
        case rows([KnownEvent], digest: VersionsDigest?)
    }

    /// The rows a window over `window` may show instances of: series that may have instances in
    /// it, single events in it or running into it (from `reach` on), overrides moved into or out
    /// of it. Their versions are read first, with a digest of them all: when it is the `kept`
    /// window's, that window's rows are the very rows (``KnownWindows``), and nothing else is
    /// read. Otherwise only the rows not remembered in their version (``KnownEvents``) are read
    /// whole: an unchanged calendar costs PostgreSQL and the driver a digest, and a changed one
    /// five columns a row, not twenty-six. A row that changed between the two statements (each
    /// sees the rows as committed when it starts) is read again from the start, so a window is
    /// made of the rows one statement saw; after three tries it is made of what the third try
    /// read, the known rows as its first statement saw them and the others as its second did,
    /// and has no digest.
    private func candidates(
        in community: UUID, window: Range<Date>, reach: Date, kept: KnownWindows.Kept?,
        on connection: PostgresConnection
    ) async throws -> Candidates {
        var tries = 0
        while true {
            tries += 1
            var rows: [KnownEvent] = []
            var digest: VersionsDigest?
            var unknown: [UUID: (sequence: Int, updatedAt: Date)] = [:]
            // The digest is of every candidate's version (``VersionsDigest``); its rows come
            // only when it is not the kept window's.
            for try await row in try await connection.query(
                """
                WITH candidates AS (
                    SELECT e.id, e.sequence, e.updated_at FROM events e
                    WHERE e.community_id = \(community) AND e.deleted_at IS NULL
                      AND CASE
                          -- An override replaces its instance wherever it moved: in the window by
                          -- either its own start or its instance's original one.
                          WHEN e.recurrence_parent_id IS NOT NULL THEN
                              (e.starts_at >= \(reach) AND e.starts_at < \(window.upperBound))
                              OR (e.recurrence_id >= \(reach) AND e.recurrence_id < \(window.upperBound))
                          WHEN e.recurrence_rule IS NOT NULL THEN e.starts_at < \(window.upperBound)
                              AND (e.recurrence_end IS NULL OR e.recurrence_end >= \(reach))
                          -- A single event in the window, or running into it.
                          ELSE e.starts_at >= \(reach) AND e.starts_at < \(window.upperBound)
                              AND (e.starts_at >= \(window.lowerBound) OR e.ends_at > \(window.lowerBound))
                      END
                ), versions AS (
                    SELECT count(*) AS rows, coalesce(bit_xor(uuid_hash_extended(
                        c.id, timestamp_hash_extended(c.updated_at AT TIME ZONE 'UTC', c.sequence))), 0) AS hash
                    FROM candidates c
                )
                SELECT v.rows, v.hash, c.id, c.sequence, c.updated_at
                FROM versions v LEFT JOIN candidates c
                    ON (v.rows, v.hash) IS DISTINCT FROM (\(kept?.digest.rows)::bigint, \(kept?.digest.hash)::bigint)
                """, logger: logger)
            {
                var cells = RowReader(row)
                digest = VersionsDigest(rows: try cells.next("rows"), hash: try cells.next("hash"))
                // The kept window's digest, or no candidate at all: the digest alone.
                guard let id: UUID = try cells.next("id") else { continue }
                let (sequence, updatedAt): (Int, Date) = (try cells.next("sequence"), try cells.next("updated_at"))
                if let known = events.known.event(id, sequence: sequence, updatedAt: updatedAt) {
                    rows.append(known)
                } else {
                    unknown[id] = (sequence, updatedAt)
                }
            }
            if let kept, digest == kept.digest { return .kept(kept) }
            guard !unknown.isEmpty else { return .rows(rows, digest: digest) }
            var moved = false
            for event in try await events.rows(Array(unknown.keys), in: community, on: connection, logger: logger) {
                let seen = unknown.removeValue(forKey: event.record.id)
                if seen?.sequence != event.record.sequence || seen?.updatedAt != event.record.updatedAt {
                    moved = true
                }
                rows.append(event)
            }
            if !moved && unknown.isEmpty { return .rows(rows, digest: digest) }
            if tries == 3 { return .rows(rows, digest: nil) }
        }
    }

    /// An event as stored, or with `recurrenceId` one instance of a series (with the caller's
    /// answers and the counts).
    func event(_ id: UUID, recurrenceId: Date?, in community: UUID, viewer: UUID) async throws -> CalendarEvent {
        try await database.transaction(userId: viewer) { connection in
            let stored = try await events.load(id, in: community, on: connection, logger: logger)
            let (series, instance) = try await events.instance(
                of: stored, recurrenceId: recurrenceId, on: connection, logger: logger)
            guard let series, let instance, let start = instance.recurrenceId ?? recurrenceId else {
                let key = InstanceKey(eventId: stored.id, recurrenceId: nil)
                let answers = try await Self.answers(
                    to: [stored.id], from: nil, before: nil, viewer: viewer, on: connection, logger: logger)
                return decorated(stored.event, key, answers)
            }
            let key = InstanceKey(eventId: series.id, recurrenceId: start)
            let answers = try await Self.answers(
                to: [series.id], from: start, before: start.addingTimeInterval(1), viewer: viewer, on: connection,
                logger: logger)
            var event = instance.instance(at: start, of: series)
            if series.exceptionDates.contains(start) { event.cancelled = true }
            return decorated(event, key, answers)
        }
    }

    /// One event or instance with the caller's answers and its counts.
    private func decorated(_ event: CalendarEvent, _ key: InstanceKey, _ answers: AnswerTable) -> CalendarEvent {
        var event = event
        CalendarWindow.decorate(&event, answers: answers[key])
        return event
    }

    // MARK: - Answers

    /// The answers to the instances of `events` (instances starting in [from, before) for a
    /// series): each instance's counts (kept per instance by a trigger) and the viewer's own
    /// answers and their dependants'.
    static func answers(
        to events: [UUID], from: Date?, before: Date?, viewer: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> AnswerTable {
        AnswerTable(
            try await answerRows(
                to: events, from: from, before: before, viewer: viewer, on: connection, logger: logger))
    }

    /// The answers statement's rows for a window's instances, in no order.
    static func answerRows(
        to answers: AnswerReach, viewer: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [AnswerTable.Row] {
        try await answerRows(
            to: answers.ids, from: answers.from, before: answers.before, viewer: viewer, on: connection, logger: logger)
    }

    /// The answers statement's rows for ``answers(to:from:before:viewer:on:logger:)``, in no order.
    static func answerRows(
        to events: [UUID], from: Date?, before: Date?, viewer: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [AnswerTable.Row] {
        try await answerRecords(to: events, from: from, before: before, viewer: viewer, on: connection, logger: logger)
            .rows()
    }

    /// The answers statement's records as PostgreSQL sent them, read (``AnswerRecords/rows()``)
    /// only when needed.
    static func answerRecords(
        to events: [UUID], from: Date?, before: Date?, viewer: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> AnswerRecords {
        guard !events.isEmpty else { return AnswerRecords(cells: []) }
        let (lower, upper) = (from ?? .distantPast, before ?? .distantFuture)
        var cells: [PostgresCell] = []
        cells.reserveCapacity(events.count * 4)
        // One statement, a row per instance and own answer: each instance's counts with the
        // caller's answers (theirs and their dependants') beside them, in no order: the table
        // sorts them. An answer always has its instance's counts row (the trigger keeps it).
        // Each row is one record, one cell for the driver instead of fifteen (`RecordReader`).
        for try await row in try await connection.query(
            """
            SELECT ROW(c.event_id, c.recurrence_id, c.going, c.seats, c.maybe, c.declined, c.waitlisted,
                       r.status::text, r.family_member_id, r.plus_ones, r.note, r.waitlisted, r.responded_at,
                       r.queued_at, r.id)
            FROM event_instance_counts c
            LEFT JOIN rsvps r ON r.user_id = \(viewer) AND r.event_id = ANY(\(events))
                AND r.event_id = c.event_id AND coalesce(r.recurrence_id, '-infinity') = coalesce(c.recurrence_id, '-infinity')
            WHERE c.event_id = ANY(\(events))
              AND (c.recurrence_id IS NULL OR (c.recurrence_id >= \(lower) AND c.recurrence_id < \(upper)))
            """, logger: logger)
        {
            var row = row.makeIterator()
            guard let cell = row.next() else { throw RecordReaderError.notARecord(nil) }
            cells.append(cell)
        }
        return AnswerRecords(cells: cells)
    }
}

/// What a window's answers statement binds, as its rows decide it: the ids of its series and
/// single events, and the instance starts it reads, a series' from as long before the window as
/// its instances last (``EventWindow``'s expansion), an override's where its instance was (moved
/// into the window from far away, keyed far away).
struct AnswerReach: Sendable {
    var ids: [UUID]
    var from: Date
    var before: Date

    init(_ rows: [KnownEvent], window: Range<Date>) {
        let moved = rows.compactMap(\.record.recurrenceId)
        let earliest = rows.lazy.filter(\.record.isSeries).map {
            window.lowerBound.addingTimeInterval(-$0.record.instanceReach)
        }
        ids = rows.lazy.filter { !$0.record.isOverride }.map(\.record.id)
        from = min(earliest.min() ?? window.lowerBound, moved.min() ?? window.lowerBound)
        before = max(window.upperBound, moved.max()?.addingTimeInterval(1) ?? window.upperBound)
    }
}
