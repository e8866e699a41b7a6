import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Who hears of money: each member with a share of a new expense (never its payer or whoever
/// added it), the payee of a settlement (and its payer when someone else recorded it), and
/// those who owe dues when they are set up or their amount changes.
@Suite struct FinanceNotificationTests {
    @Test func expensesSettlementsAndDuesReachThoseTheyConcernOnce() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (coach, ada, ben, cy) = (
                    try await api.signIn("Coach"), try await api.signIn("Ada"), try await api.signIn("Ben"),
                    try await api.signIn("Cy")
                )
                let club = try await api.club(of: coach, with: [ada, ben, cy])

                // Ada adds a bus Ben paid, split among Ada, Ben and Cy: Cy hears what he owes Ben.
                let bus = try await FinanceTests.expense(
                    api, in: club, by: ada, FinanceTests.equal(900, paidBy: ben, among: [ada, ben, cy]))
                #expect(try await harness.settled(cy, .expenseAdded, count: 1))
                #expect(try await harness.settled(ada, .expenseAdded, count: 0))
                #expect(try await harness.settled(ben, .expenseAdded, count: 0))
                #expect(try await harness.settled(coach, .expenseAdded, count: 0))
                let told = try #require(try await harness.history(of: cy).first { $0.type == .expenseAdded })
                #expect(told.title == "You owe Ben 3.00 EUR")
                #expect(told.data["transactionId"] == .string(bus.id.lowercasedString))

                // Cy pays Ben: Ben hears; the coach records Ada's payment: Ben and Ada hear.
                _ = try await api.call(
                    .post, FinanceTests.path(club, "settlements"), as: cy,
                    json: #"{"to":"\#(ben.id)","amount":300,"currency":"EUR","method":"paypal"}"#)
                #expect(try await harness.settled(ben, .settlementReceived, count: 1))
                #expect(try await harness.settled(cy, .settlementReceived, count: 0))
                _ = try await api.call(
                    .post, FinanceTests.path(club, "settlements"), as: coach,
                    json: #"{"from":"\#(ada.id)","to":"\#(ben.id)","amount":300,"currency":"EUR","method":"cash"}"#)
                #expect(try await harness.settled(ben, .settlementReceived, count: 2))
                #expect(try await harness.settled(ada, .settlementReceived, count: 1))

                // Dues for Ada and Cy: each hears once; a payment asks nobody again.
                let dues = try await api.call(
                    .post, FinanceTests.path(club, "dues"), as: coach,
                    json:
                        #"{"name":"Season","amount":5000,"currency":"EUR","dueDate":"2099-03-01","memberIds":["\#(ada.id)","\#(cy.id)"]}"#
                ).data(Dues.self)
                #expect(try await harness.settled(ada, .paymentRequest, count: 1))
                #expect(try await harness.settled(cy, .paymentRequest, count: 1))
                #expect(try await harness.settled(ben, .paymentRequest, count: 0))
                let request = try #require(try await harness.history(of: ada).first { $0.type == .paymentRequest })
                #expect(request.title == "Season: 50.00 EUR due 2099-03-01")
                #expect(request.data["duesId"] == .string(dues.id.lowercasedString))
                _ = try await api.call(
                    .post, FinanceTests.path(club, "dues/\(dues.id)/payments"), as: coach,
                    json: #"{"userId":"\#(ada.id)","amount":5000,"method":"cash"}"#)
                #expect(try await harness.settled(ada, .paymentRequest, count: 1))
                // A new name asks nobody again; a new amount asks those who owe.
                _ = try await api.call(
                    .patch, FinanceTests.path(club, "dues/\(dues.id)"), as: coach, json: #"{"name":"Season 2099"}"#)
                _ = try await api.call(
                    .patch, FinanceTests.path(club, "dues/\(dues.id)"), as: coach, json: #"{"amount":6000}"#)
                #expect(try await harness.settled(cy, .paymentRequest, count: 2))
                #expect(try await harness.settled(ada, .paymentRequest, count: 2))
                let again = try #require(try await harness.history(of: cy).first { $0.type == .paymentRequest })
                #expect(again.title == "Season 2099 is now 60.00 EUR, due 2099-03-01")
            }
        }
    }
}
