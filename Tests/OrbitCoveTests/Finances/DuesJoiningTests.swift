import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

@testable import CoreService

/// Dues owed by every member fall to those who had first joined by a period's due date or by
/// the day the dues were set up: someone who joins a club in June does not owe the January,
/// February and March of dues set up in December; dues set up today for periods already past
/// (a club moving onto the app) are owed by everyone who is a member today; leaving and coming
/// back does not wipe what was owed.
@Suite struct DuesJoiningTests {
    @Test func aNewMemberOwesOnlyThePeriodsFallingDueSinceJoining() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada])
            try await Self.joined(daysAgo: 100, in: club)
            // Monthly from 70 days ago, set up 75 days ago: three periods past (about 70, 40 and
            // 10 days ago), one to come. Ben joins today.
            let first = LedgerDay.today(in: "UTC", now: Date().addingTimeInterval(-70 * 86_400))
            let dues = try await Self.dues("Season", from: first, in: club, by: api, as: coach)
            try await Self.setUp(dues, daysAgo: 75)
            try await api.join(ben, club, invitedBy: coach)
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

            // Dues set up today for periods already past are owed by everyone who is a member now.
            let kit = try await Self.dues("Kit", from: first, in: club, by: api, as: coach)
            let bensKit = try await api.call(.get, FinanceTests.path(club, "dues/\(kit.id)"), as: ben)
                .data(DuesDetail.self).dues.mine
            #expect(bensKit.count == 4 && bensKit.first?.period == first)

            // Ada leaves and comes back: she still owes what she owed.
            #expect(try await api.call(.post, FinanceTests.path(club, "leave"), as: ada).status == .noContent)
            try await api.join(ada, club, invitedBy: coach)
            let back = try await api.call(.get, path, as: ada).data(DuesDetail.self).dues.mine
            #expect(back.map(\.period) == adas.map(\.period))
        }
    }

    /// A member who leaves with periods unpaid still owes them: the treasurer sees them, overdue,
    /// in those periods' standings, and records their payment or waives them; what falls due
    /// after they left is not theirs, and the current period's summary counts those who owe it.
    @Test func aMemberWhoLeftStillOwesWhatFellDueBefore() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben")
            )
            let club = try await api.club(of: coach, with: [ada, ben])
            try await Self.joined(daysAgo: 100, in: club)
            // Monthly from 70 days ago, set up 75 days ago: periods about 70, 40 and 10 days ago,
            // and one to come. Ben left 25 days ago, owing the first two.
            let first = LedgerDay.today(in: "UTC", now: Date().addingTimeInterval(-70 * 86_400))
            let dues = try await Self.dues("Season", from: first, in: club, by: api, as: coach)
            try await Self.setUp(dues, daysAgo: 75)
            // The same, owed by the two it names.
            let named = try await Self.dues(
                "Kit fund", from: first, in: club, by: api, as: coach, naming: [coach, ben])
            try await Self.setUp(named, daysAgo: 75)
            #expect(try await api.call(.post, FinanceTests.path(club, "leave"), as: ben).status == .noContent)
            try await Self.left(ben, daysAgo: 25, in: club)
            let path = FinanceTests.path(club, "dues/\(dues.id)")
            let current = try await api.call(.get, path, as: coach).data(DuesDetail.self)
            let periods = DuesSchedule.periods(from: first, recurrence: .monthly, through: current.dues.currentPeriod)
            try #require(periods.count == 4)

            for period in periods.prefix(2) {
                let standings = try await api.call(.get, "\(path)?period=\(period)", as: coach).data(DuesDetail.self)
                #expect(Set(standings.members.map(\.userId)) == [coach.id, ada.id, ben.id], "\(period)")
                #expect(standings.members.first { $0.userId == ben.id }?.status == .overdue, "\(period)")
            }
            let third = try await api.call(.get, "\(path)?period=\(periods[2])", as: coach).data(DuesDetail.self)
            #expect(Set(third.members.map(\.userId)) == [coach.id, ada.id])
            #expect(Set(current.members.map(\.userId)) == [coach.id, ada.id])
            #expect(current.dues.summary.unpaid == 2)

            // His debt is settled as anyone's: a payment for the first, a waiver for the second.
            let paid = try await api.call(
                .post, "\(path)/payments", as: coach,
                json: #"{"userId":"\#(ben.id)","amount":1000,"method":"cash","period":"\#(first)"}"#)
            #expect(try paid.data(DuesMemberStatus.self).status == .paid)
            let waived = try await api.call(
                .post, "\(path)/waivers", as: coach, json: #"{"userId":"\#(ben.id)","period":"\#(periods[1])"}"#)
            #expect(try waived.data(DuesMemberStatus.self).status == .waived)
            // What fell due after he left is not his to pay.
            let late = try await api.call(
                .post, "\(path)/payments", as: coach,
                json: #"{"userId":"\#(ben.id)","amount":1000,"method":"cash","period":"\#(periods[2])"}"#)
            #expect(late.status == .notFound && late.errorCode == "MEMBER_NOT_FOUND")

            // Dues that name him are his as long as he was a member, as dues owed by everyone
            // are (a hostile probe's: named, he owed every period after leaving too).
            let namedPath = FinanceTests.path(club, "dues/\(named.id)")
            for (index, period) in periods.enumerated() {
                let standings = try await api.call(.get, "\(namedPath)?period=\(period)", as: coach)
                    .data(DuesDetail.self)
                let expected: Set = index < 2 ? [coach.id, ben.id] : [coach.id]
                #expect(Set(standings.members.map(\.userId)) == expected, "\(period)")
            }
            let namedLate = try await api.call(
                .post, "\(namedPath)/payments", as: coach,
                json: #"{"userId":"\#(ben.id)","amount":1000,"method":"cash","period":"\#(periods[2])"}"#)
            #expect(namedLate.status == .notFound && namedLate.errorCode == "MEMBER_NOT_FOUND")
            let namedWaiver = try await api.call(
                .post, "\(namedPath)/waivers", as: coach, json: #"{"userId":"\#(ben.id)","period":"\#(periods[3])"}"#)
            #expect(namedWaiver.status == .notFound && namedWaiver.errorCode == "MEMBER_NOT_FOUND")
            let namedNow = try await api.call(.get, namedPath, as: coach).data(DuesDetail.self)
            #expect(Set(namedNow.members.map(\.userId)) == [coach.id])

            // Dues set up today for periods already past fall due today: Ada, who leaves today,
            // owes them as she did this morning (a hostile probe's: they vanished as she left).
            let kit = try await Self.dues("Kit", from: first, in: club, by: api, as: coach)
            let kitPath = FinanceTests.path(club, "dues/\(kit.id)")
            #expect(try await api.call(.post, FinanceTests.path(club, "leave"), as: ada).status == .noContent)
            let owed = try await api.call(.get, "\(kitPath)?period=\(first)", as: coach).data(DuesDetail.self)
            #expect(owed.members.first { $0.userId == ada.id }?.status == .overdue)
            // But dues set up after she left, later the same day, are not hers, back periods and
            // all: they did not exist while she was a member (a hostile probe's).
            let after = try await Self.dues("Trip", from: first, in: club, by: api, as: coach)
            let afterPath = FinanceTests.path(club, "dues/\(after.id)")
            for period in periods {
                let standings = try await api.call(.get, "\(afterPath)?period=\(period)", as: coach)
                    .data(DuesDetail.self)
                #expect(Set(standings.members.map(\.userId)) == [coach.id], "\(period)")
            }
        }
    }

    static func dues(
        _ name: String, from first: String, in club: Community, by api: CoreHarness, as admin: CoreHarness.Person,
        naming owers: [CoreHarness.Person]? = nil
    ) async throws -> Dues {
        let named = owers.map { #","memberIds":["# + $0.map { #""\#($0.id)""# }.joined(separator: ",") + "]" } ?? ""
        return try await api.call(
            .post, FinanceTests.path(club, "dues"), as: admin,
            json:
                #"{"name":"\#(name)","amount":1000,"currency":"EUR","dueDate":"\#(first)","recurrence":"monthly"\#(named)}"#
        ).data(Dues.self)
    }

    /// Moves every membership of `club` back by `days` (the harness makes them all now).
    static func joined(daysAgo days: Int, in club: Community) async throws {
        try await asOwner(
            """
            UPDATE members SET joined_at = now() - \(days) * interval '1 day',
                               first_joined_at = now() - \(days) * interval '1 day'
            WHERE community_id = \(club.id) RETURNING 1
            """)
    }

    /// Moves when `person` left `club` back to `days` ago.
    static func left(_ person: CoreHarness.Person, daysAgo days: Int, in club: Community) async throws {
        try await asOwner(
            """
            UPDATE members SET left_at = now() - \(days) * interval '1 day'
            WHERE community_id = \(club.id) AND user_id = \(person.id) AND left_at IS NOT NULL RETURNING 1
            """)
    }

    /// Moves when `dues` were set up back by `days`.
    static func setUp(_ dues: Dues, daysAgo days: Int) async throws {
        try await asOwner(
            "UPDATE dues SET created_at = now() - \(days) * interval '1 day' WHERE id = \(dues.id) RETURNING 1")
    }

    private static func asOwner(_ statement: PostgresQuery) async throws {
        try await withTestDatabase(url: TestEnvironment.ownerDatabaseURL) { owner in
            for try await _ in try await owner.client.query(statement, logger: TestEnvironment.logger) {}
        }
    }
}
