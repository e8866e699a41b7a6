import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// The finances' own errors, each with its stable code.
enum FinanceErrors {
    static let transactionNotFound = APIError.notFound("TRANSACTION_NOT_FOUND", "No such transaction in this community")
    static let duesNotFound = APIError.notFound("DUES_NOT_FOUND", "No such dues in this community")
    static let eventNotFound = APIError.notFound("EVENT_NOT_FOUND", "No such event in this community")
    static let duesWaived = APIError(
        .conflict, code: "DUES_WAIVED", message: "These dues are waived for this member; withdraw the waiver first")
    static let notOwed = APIError(
        .conflict, code: "DUES_NOT_OWED", message: "This member does not owe these dues")
    static func exceedsDebt(_ owed: Int64) -> APIError {
        APIError(
            .conflict, code: "SETTLEMENT_EXCEEDS_DEBT",
            message: "A member who has left is settled with only for what is owed between you",
            details: ["owed": .number(Double(owed))])
    }
    static func formerMemberShare(_ user: UUID) -> APIError {
        APIError(
            .conflict, code: "FORMER_MEMBER_SHARE",
            message: "A member who has left may come to owe less or be owed more by this entry, never the other way",
            details: ["userId": .string(user.lowercasedString)])
    }
    static let ledgerFull = APIError(
        .conflict, code: "LEDGER_LIMIT", message: "This would take a balance past what the ledger can hold")

    /// A user named in `field` who is not a current member.
    static func memberNotFound(_ field: String) -> APIError {
        APIError(
            .notFound, code: "MEMBER_NOT_FOUND", message: "No such member in this community",
            details: ["fields": .object([field: .string("is not a member of this community")])])
    }
}
