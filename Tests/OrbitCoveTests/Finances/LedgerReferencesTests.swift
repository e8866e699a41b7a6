import Foundation
import MediaService
import OrbitCoveModels
import Testing

/// What an entry of the ledger names beside money: an event and a receipt.
@Suite struct LedgerReferencesTests {
    /// An expense whose event and receipt were deleted since keeps them, and a client sending
    /// back the whole expense it read is not refused for them (a hostile probe's: both were
    /// refused again); what an edit adds is still checked.
    @Test func anExpenseKeepsAnEventAndAReceiptDeletedSince() async throws {
        try await MediaHarness.run { harness in
            let api = harness.api
            let (coach, ada) = (try await api.signIn("Coach"), try await api.signIn("Ada"))
            let club = try await api.club(of: coach, with: [ada])
            let receipt = try await harness.upload(
                try MediaTests.fixture("photo.png"), as: ada, in: club, type: MediaType.png, purpose: .receipt)
            let match = try await api.createEvent(
                in: club, by: coach, #"{"title":"Match","startsAt":"2031-05-06T18:00:00Z"}"#)
            let transactions = "/api/v1/communities/\(club.id)/transactions"
            let created = try await api.call(
                .post, transactions, as: ada,
                json: """
                    {"description":"Balls","totalAmount":3000,"currency":"EUR",\
                    "split":{"method":"equal","members":[{"userId":"\(ada.id)"}]},\
                    "receiptMediaId":"\(receipt.id)","linkedEventId":"\(match.id)"}
                    """)
            #expect(created.status == .created)
            let expense = try created.data(LedgerTransaction.self).id

            #expect(try await harness.call(.delete, "/api/v1/media/\(receipt.id)", as: ada).status == .noContent)
            let events = "/api/v1/communities/\(club.id)/events"
            #expect(try await api.call(.delete, "\(events)/\(match.id)", as: coach).status == .noContent)
            let resent = try await api.call(
                .patch, "\(transactions)/\(expense)", as: ada,
                json: #"{"description":"Match balls","receiptMediaId":"\#(receipt.id)","linkedEventId":"\#(match.id)"}"#
            )
            #expect(resent.status == .ok, "\(resent.status) \(resent.errorCode ?? "") \(resent.fieldErrors)")
            let kept = try resent.data(LedgerTransaction.self)
            #expect(kept.description == "Match balls")
            #expect(kept.receiptMediaId == receipt.id && kept.linkedEventId == match.id)

            // A deleted event the expense did not name is refused, as a new receipt that is gone.
            let friendly = try await api.createEvent(
                in: club, by: coach, #"{"title":"Friendly","startsAt":"2031-05-07T18:00:00Z"}"#)
            #expect(try await api.call(.delete, "\(events)/\(friendly.id)", as: coach).status == .noContent)
            let added = try await api.call(
                .patch, "\(transactions)/\(expense)", as: ada, json: #"{"linkedEventId":"\#(friendly.id)"}"#)
            #expect(added.status == .badRequest && added.fieldErrors["linkedEventId"] != nil)
            let other = try await harness.upload(
                try MediaTests.fixture("photo.png"), as: ada, in: club, type: MediaType.png, purpose: .receipt)
            #expect(try await harness.call(.delete, "/api/v1/media/\(other.id)", as: ada).status == .noContent)
            let swapped = try await api.call(
                .patch, "\(transactions)/\(expense)", as: ada, json: #"{"receiptMediaId":"\#(other.id)"}"#)
            #expect(swapped.status == .badRequest && swapped.fieldErrors["receiptMediaId"] != nil)
        }
    }
}
