import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

@testable import RemindersService

/// The reminders service as clients use it, beside core (communities, members, events, dues)
/// and auth: its routes in process, its consumer on the test vhost's `reminders` queue, its
/// scheduler firing what falls due in the test database.
struct RemindersHarness: Sendable {
    let api: CoreHarness
    let reminders: any TestClientProtocol
    let database: Database

    static func run(
        core: [String: String] = [:], reminders extra: [String: String] = [:],
        _ body: @Sendable (RemindersHarness) async throws -> Void
    ) async throws {
        try await CoreHarness.run(core: core) { api in
            let runtime = try TestEnvironment.runtime(
                name: "orbitcove-reminders", extra: ["ORBITCOVE_JWKS_URL": api.jwksURL])
            let app = runtime.makeApplication(
                try RemindersApplication.parts(
                    runtime: runtime,
                    // A row a test makes due is fired within a second, not the 20 s idle sleep.
                    environment: Environment(
                        ["ORBITCOVE_REMINDERS_LONGEST_SLEEP_SECONDS": "1"].merging(extra) { _, new in new })))
            try await app.test(.router) { client in
                try await withTestDatabase { database in
                    try await body(RemindersHarness(api: api, reminders: client, database: database))
                }
            }
        }
    }

    @discardableResult
    func call(
        _ method: HTTPRequest.Method, _ path: String, as person: CoreHarness.Person?, json: String? = nil
    ) async throws -> CoreHarness.Reply {
        var fields = HTTPFields()
        if let person { fields[.authorization] = "Bearer \(person.token)" }
        if json != nil { fields[.contentType] = "application/json" }
        fields[.realIP] = TestEnvironment.uniqueClientAddress()
        let response = try await reminders.executeRequest(
            uri: path, method: method, headers: fields, body: json.map { ByteBuffer(string: $0) })
        return CoreHarness.Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
    }

    /// A care reminder made through the API.
    func reminder(
        in community: Community, by person: CoreHarness.Person, _ body: String
    ) async throws -> CareReminder {
        let reply = try await call(.post, "/api/v1/communities/\(community.id)/reminders", as: person, json: body)
        guard reply.status == .created else {
            throw TestFailure("reminder refused: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return try reply.data(CareReminder.self)
    }

    /// The schedule rows of a subject, as the system sees them.
    func schedule(of subject: UUID) async throws -> [ScheduleRow] {
        try await database.transaction(scope: .system) { connection in
            var rows: [ScheduleRow] = []
            for try await (kind, occurrence, step, due, fired, outcome) in try await connection.query(
                """
                SELECT kind, occurrence, step, due_at, fired_at, outcome FROM reminder_schedule
                WHERE subject_id = \(subject) ORDER BY due_at, kind, step
                """, logger: TestEnvironment.logger
            ).decode((String, String, Int, Date, Date?, String?).self) {
                rows.append(
                    ScheduleRow(
                        kind: kind, occurrence: occurrence, step: step, dueAt: due, firedAt: fired, outcome: outcome))
            }
            return rows
        }
    }

    struct ScheduleRow: Sendable, Equatable {
        var kind: String
        var occurrence: String
        var step: Int
        var dueAt: Date
        var firedAt: Date?
        var outcome: String?
    }

    /// Makes the subject's rows matching `kind` (and `occurrence`, `step`) due a moment ago.
    func makeDue(_ subject: UUID, kind: String, occurrence: String? = nil, step: Int? = nil) async throws {
        try await database.transaction(scope: .system) { connection in
            try await connection.query(
                """
                UPDATE reminder_schedule SET due_at = now() - interval '1 second'
                WHERE subject_id = \(subject) AND kind = \(kind) AND fired_at IS NULL
                  AND (\(occurrence == nil) OR occurrence = \(occurrence ?? ""))
                  AND (\(step == nil) OR step = \(step ?? 0))
                """, logger: TestEnvironment.logger)
        }
    }

    /// The `reminder.due` messages written for a subject, oldest first.
    func messages(about subject: UUID) async throws -> [(id: UUID, due: ReminderDue)] {
        try await database.transaction(scope: .system) { connection in
            var found: [(UUID, ReminderDue)] = []
            for try await (id, data) in try await connection.query(
                """
                SELECT id, data::text FROM outbox
                WHERE message_type = 'reminder.due' AND data ->> 'subjectId' = \(subject.lowercasedString)
                ORDER BY occurred_at, id
                """, logger: TestEnvironment.logger
            ).decode((UUID, String).self) {
                found.append((id, try JSONCoding.decoder.decode(ReminderDue.self, from: Data(data.utf8))))
            }
            return found
        }
    }

    /// Waits until the reminders service has taken every message core sent it about
    /// `community` (so a plan in flight cannot move a row a test is about to make due).
    func settled(_ community: Community) async throws {
        let held = try await eventually(timeout: .seconds(20)) {
            try await count(
                """
                SELECT count(*)::int FROM outbox o
                WHERE o.queue = 'reminders' AND o.community_id = \(community.id)
                  AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.message_id = o.id AND i.consumer = 'reminders')
                """, in: database) == 0
        }
        guard held else { throw TestFailure("the reminders service did not take \(community.id)'s messages") }
    }

    /// Waits until the subject's matching rows have fired; the messages then written.
    func fired(
        _ subject: UUID, kind: String, count expected: Int = 1
    ) async throws -> [ReminderDue] {
        let held = try await eventually(timeout: .seconds(20)) {
            try await schedule(of: subject).filter { $0.kind == kind && $0.firedAt != nil }.count >= expected
        }
        guard held else { throw TestFailure("\(kind) rows of \(subject) did not fire") }
        return try await messages(about: subject).map(\.due).filter { $0.kind.rawValue == kind }
    }
}
