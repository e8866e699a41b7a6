import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Testing

/// Row-level security holds on its own for the ledger's and dues' tables: statements the
/// application never runs, run as the services' role in a member's transaction, are refused
/// or touch nothing.
@Suite struct FinanceSecondWallTests {
    typealias Outcome = SecondWallTests.Outcome

    @Test func aMemberCannotRewriteAnothersSplitsNorRecordDuesNorWriteBalances() async throws {
        try await CoreHarness.run { api in
            let (coach, ada, ben, eve, dan) = (
                try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                try await api.signIn("Eve"), try await api.signIn("Dan")
            )
            let club = try await api.club(of: coach, with: [ada, ben, dan])
            #expect(try await api.call(.post, FinanceTests.path(club, "leave"), as: dan).status == .noContent)
            _ = try await api.community(by: eve)
            let bus = try await FinanceTests.expense(
                api, in: club, by: ada, FinanceTests.equal(300, paidBy: ada, among: [ada, ben, coach]))
            let dues = try await api.call(
                .post, FinanceTests.path(club, "dues"), as: coach,
                json: #"{"name":"Season","amount":5000,"currency":"EUR","dueDate":"2099-01-01"}"#
            ).data(Dues.self)
            try await withTestDatabase { db in
                func run(_ sql: PostgresQuery, as person: UUID) async -> Outcome {
                    await SecondWallTests.run(sql, as: person, in: db)
                }
                // Ben, a member, on Ada's expense: its splits are hers (and the admins').
                #expect(
                    await run("UPDATE splits SET amount = 0 WHERE transaction_id = \(bus.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                #expect(
                    await run("DELETE FROM splits WHERE transaction_id = \(bus.id) RETURNING 1", as: ben.id) == .rows(0)
                )
                #expect(
                    await run(
                        "INSERT INTO splits (transaction_id, user_id, amount) VALUES (\(bus.id), \(eve.id), 1) RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run("UPDATE transactions SET total_amount = 1 WHERE id = \(bus.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                // Balances are the triggers' alone, even for the admin.
                #expect(
                    await run(
                        "UPDATE ledger_balances SET net = 0 WHERE community_id = \(club.id) RETURNING 1", as: coach.id)
                        == .rows(0))
                #expect(
                    await run(
                        "INSERT INTO ledger_balances (community_id, currency, user_id, net) VALUES (\(club.id), 'EUR', \(ben.id), 9) RETURNING 1",
                        as: coach.id) == .refused)
                #expect(
                    await run("DELETE FROM ledger_pairs WHERE community_id = \(club.id) RETURNING 1", as: coach.id)
                        == .rows(0))
                // Nor can Ada move her split's copies of the payer or currency herself.
                #expect(
                    await run(
                        "UPDATE splits SET payer_id = \(ben.id) WHERE transaction_id = \(bus.id) RETURNING 1",
                        as: ada.id)
                        == .refused)
                // Dues payments, waivers and amounts are the admins'.
                #expect(
                    await run(
                        "INSERT INTO dues_payments (dues_id, user_id, amount_paid, recorded_by, period) VALUES (\(dues.id), \(ben.id), 5000, \(ben.id), '2099-01-01') RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run(
                        "INSERT INTO dues_waivers (dues_id, user_id, period, waived_by) VALUES (\(dues.id), \(ben.id), '2099-01-01', \(ben.id)) RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run("UPDATE dues_amounts SET amount = 1 WHERE dues_id = \(dues.id) RETURNING 1", as: ben.id)
                        == .rows(0))
                // Revisions: only of what one may change, as oneself; never rewritten.
                #expect(
                    await run(
                        "INSERT INTO finance_revisions (community_id, subject_kind, subject_id, revision, action, changed_by, snapshot) VALUES (\(club.id), 'transaction', \(bus.id), 9, 'edited', \(ben.id), '{}') RETURNING 1",
                        as: ben.id) == .refused)
                #expect(
                    await run(
                        "UPDATE finance_revisions SET action = 'x' WHERE subject_id = \(bus.id) RETURNING 1", as: ada.id
                    )
                        == .rows(0))
                // Eve, in another community, reads none of it.
                #expect(await run("SELECT 1 FROM splits WHERE transaction_id = \(bus.id)", as: eve.id) == .rows(0))
                #expect(
                    await run("SELECT 1 FROM ledger_balances WHERE community_id = \(club.id)", as: eve.id) == .rows(0))
                #expect(
                    await run("SELECT 1 FROM finance_revisions WHERE subject_id = \(bus.id)", as: eve.id) == .rows(0))
                #expect(await run("SELECT 1 FROM dues_amounts WHERE dues_id = \(dues.id)", as: eve.id) == .rows(0))
                // An entry's payer is someone of the community, on an edit as on its creation
                // (a hostile probe moved Ada's expense onto Eve, who never was a member).
                #expect(
                    await run(
                        "UPDATE transactions SET paid_by = \(eve.id) WHERE id = \(bus.id) RETURNING 1", as: ada.id)
                        == .refused)
                #expect(
                    await run(
                        "UPDATE transactions SET paid_by = \(ben.id) WHERE id = \(bus.id) RETURNING 1", as: ada.id)
                        == .rows(1))
                // A split is a current member's, and a live transaction's splits add up to its total.
                #expect(
                    await run(
                        "INSERT INTO splits (transaction_id, user_id, amount) VALUES (\(bus.id), \(eve.id), 0) RETURNING 1",
                        as: ada.id) == .refused)
                #expect(
                    await run(
                        "UPDATE splits SET amount = amount + 1 WHERE transaction_id = \(bus.id) AND user_id = \(ben.id) RETURNING 1",
                        as: ada.id) == .refused)
                // A revision only for the revision the entry is at: none written ahead.
                #expect(
                    await run(
                        "INSERT INTO finance_revisions (community_id, subject_kind, subject_id, revision, action, changed_by, snapshot) VALUES (\(club.id), 'transaction', \(bus.id), 2, 'edited', \(ada.id), '{}') RETURNING 1",
                        as: ada.id) == .refused)
                // Payment handles are the member's own, not even an admin's to change.
                #expect(
                    await run(
                        "UPDATE members SET payment_handles = '{\"paypal\":\"coach\"}' WHERE user_id = \(ada.id) AND community_id = \(club.id) RETURNING 1",
                        as: coach.id) == .refused)
                #expect(
                    await run(
                        "UPDATE members SET payment_handles = '{\"paypal\":\"ada\"}' WHERE user_id = \(ada.id) AND community_id = \(club.id) RETURNING 1",
                        as: ada.id) == .rows(1))
                // A settlement is recorded by one of its parties (or an admin), between members.
                func settlement(from: UUID, to: UUID) -> PostgresQuery {
                    """
                    INSERT INTO transactions (community_id, created_by, type, description, total_amount, currency, paid_by,
                                              paid_to, category, transaction_date, settlement_method)
                    VALUES (\(club.id), \(ben.id), 'settlement', '', 100, 'EUR', \(from), \(to), 'other', '2026-01-01',
                            'cash') RETURNING 1
                    """
                }
                #expect(await run(settlement(from: coach.id, to: ada.id), as: ben.id) == .refused)
                #expect(await run(settlement(from: ben.id, to: eve.id), as: ben.id) == .refused)
                // A member who left may be a party to a settlement (migration 0070), never an
                // expense's payer.
                let recorded = try? await db.transaction(scope: .user(ben.id)) { connection in
                    // With its split, as the API writes it (the splits must add up at commit).
                    let id = UUID()
                    try await connection.run(
                        """
                        INSERT INTO transactions (id, community_id, created_by, type, description, total_amount, currency,
                                                  paid_by, paid_to, category, transaction_date, settlement_method)
                        VALUES (\(id), \(club.id), \(ben.id), 'settlement', '', 100, 'EUR', \(dan.id), \(ben.id), 'other',
                                '2026-01-01', 'cash')
                        """, logger: TestEnvironment.logger)
                    try await connection.run(
                        """
                        INSERT INTO splits (transaction_id, user_id, amount, share, position)
                        VALUES (\(id), \(ben.id), 100, NULL, 0)
                        """, logger: TestEnvironment.logger)
                    return id
                }
                #expect(recorded != nil, "a settlement from a member who left, recorded by its payee")
                #expect(
                    await run(
                        "INSERT INTO transactions (community_id, created_by, type, description, total_amount, currency, paid_by, category, transaction_date, split_method) VALUES (\(club.id), \(ben.id), 'expense', 'x', 1, 'EUR', \(dan.id), 'other', '2026-01-01', 'equal') RETURNING 1",
                        as: ben.id) == .refused)
                // An expense's payer is a member.
                #expect(
                    await run(
                        "INSERT INTO transactions (community_id, created_by, type, description, total_amount, currency, paid_by, category, transaction_date, split_method) VALUES (\(club.id), \(ben.id), 'expense', 'x', 1, 'EUR', \(eve.id), 'other', '2026-01-01', 'equal') RETURNING 1",
                        as: ben.id) == .refused)
                // The admin may record a payment, as themselves.
                #expect(
                    await run(
                        "INSERT INTO dues_payments (dues_id, user_id, amount_paid, recorded_by, period) VALUES (\(dues.id), \(ben.id), 5000, \(coach.id), '2099-01-01') RETURNING 1",
                        as: coach.id) == .rows(1))
            }
        }
    }
}
