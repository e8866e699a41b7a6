import Foundation
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import RemindersService
import Testing

/// Dues changes go to the `reminders` queue as well as `notifications`, and the reminders
/// service takes each (none is dead-lettered) until its reminders turn them into due-date and
/// overdue reminders.
@Suite struct DuesRemindersQueueTests {
    @Test func duesChangesReachTheRemindersServiceAndAreTaken() async throws {
        try await CoreHarness.run { api in
            let runtime = try TestEnvironment.runtime(name: "orbitcove-reminders")
            let app = runtime.makeApplication(try RemindersApplication.parts(runtime: runtime))
            try await app.test(.router) { _ in
                let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
                let club = try await api.club(of: coach, with: [ada])
                let dues = try await api.call(
                    .post, FinanceTests.path(club, "dues"), as: coach,
                    json: #"{"name":"Season","amount":5000,"currency":"EUR","dueDate":"2099-03-01"}"#
                ).data(Dues.self)
                _ = try await api.call(
                    .post, FinanceTests.path(club, "dues/\(dues.id)/payments"), as: coach,
                    json: #"{"userId":"\#(ada.id)","amount":5000,"method":"cash"}"#)
                try await withTestDatabase { db in
                    let taken = try await eventually {
                        try await db.transaction(scope: .system) { connection in
                            try await connection.query(
                                """
                                SELECT 1 FROM outbox o JOIN inbox i ON i.message_id = o.id AND i.consumer = 'reminders'
                                WHERE o.queue = 'reminders' AND o.message_type = 'dues.changed'
                                  AND o.data ->> 'duesId' = \(dues.id.lowercasedString)
                                """, logger: TestEnvironment.logger
                            ).collect().count == 2
                        }
                    }
                    #expect(taken)
                }
            }
        }
    }
}
