import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

@testable import CoreService

/// Dues owed by every member fall to those who had joined by each period's due date: someone
/// who joins a club in June does not owe its January, February or March.
@Suite struct DuesJoiningTests {
    @Test func aNewMemberOwesOnlyThePeriodsFallingDueSinceJoining() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada, ben])
            try await Self.joined(daysAgo: 100, in: club, except: ben)
            // Monthly from 70 days ago: three periods past (about 70, 40 and 10 days ago), one to come.
            let first = LedgerDay.today(in: "UTC", now: Date().addingTimeInterval(-70 * 86_400))
            let dues = try await api.call(
                .post, FinanceTests.path(club, "dues"), as: coach,
                json: #"{"name":"Season","amount":1000,"currency":"EUR","dueDate":"\#(first)","recurrence":"monthly"}"#
            ).data(Dues.self)
            let path = FinanceTests.path(club, "dues/\(dues.id)")

            // Ada, a member all along, owes every period; Ben only the one to come.
            let adas = try await api.call(.get, path, as: ada).data(DuesDetail.self).dues.mine
            #expect(adas.count == 4 && adas.first?.period == first)
            #expect(adas.dropLast().allSatisfy { $0.status == .overdue })
            let bens = try await api.call(.get, path, as: ben).data(DuesDetail.self).dues.mine
            #expect(bens.map(\.period) == [dues.currentPeriod] && bens.first?.status == .unpaid)
            let firstPeriod = try await api.call(.get, "\(path)?period=\(first)", as: coach).data(DuesDetail.self)
            #expect(Set(firstPeriod.members.map(\.userId)) == [coach.id, ada.id])
            #expect(firstPeriod.members.allSatisfy { $0.status == .overdue })
            let current = try await api.call(.get, path, as: coach).data(DuesDetail.self)
            #expect(Set(current.members.map(\.userId)) == [coach.id, ada.id, ben.id])
            #expect(current.dues.summary.unpaid == 3)

            // A payment or a waiver for a period before Ben joined is refused; for his own, taken.
            let early = try await api.call(
                .post, "\(path)/payments", as: coach,
                json: #"{"userId":"\#(ben.id)","amount":1000,"method":"cash","period":"\#(first)"}"#)
            #expect(early.status == .conflict && early.errorCode == "DUES_NOT_OWED")
            let waived = try await api.call(
                .post, "\(path)/waivers", as: coach, json: #"{"userId":"\#(ben.id)","period":"\#(first)"}"#)
            #expect(waived.errorCode == "DUES_NOT_OWED")
            let paid = try await api.call(
                .post, "\(path)/payments", as: coach, json: #"{"userId":"\#(ben.id)","amount":1000,"method":"cash"}"#)
            #expect(try paid.data(DuesMemberStatus.self).status == .paid)
        }
    }

    /// Moves every membership of `club` but `person`'s back by `days` (the harness makes them all now).
    static func joined(daysAgo days: Int, in club: Community, except person: CoreHarness.Person) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            for try await _ in try await owner.client.query(
                """
                UPDATE members SET joined_at = now() - \(days) * interval '1 day'
                WHERE community_id = \(club.id) AND user_id <> \(person.id) RETURNING 1
                """, logger: TestEnvironment.logger)
            {}
        }
    }
}
