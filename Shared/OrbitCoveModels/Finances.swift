import Foundation

/// What a ledger row is: the seed's `transaction_type` (dues are kept apart, in ``Dues``).
package enum TransactionType: String, Codable, Sendable, CaseIterable {
    case expense
    case settlement
}

/// What an expense was for: the seed's `expense_category`.
package enum ExpenseCategory: String, Codable, Sendable, CaseIterable {
    case equipment
    case food
    case travel
    case dues
    case other
}

/// How an expense's total is shared.
package enum SplitMethod: String, Codable, Sendable, CaseIterable {
    /// Equally among the listed members.
    case equal
    /// Each member's amount, in minor units, adding up to the total.
    case exact
    /// Each member's percentage in basis points (1 % = 100), adding up to 10,000.
    case percentages
    /// Each member's number of shares (a family of three takes 3).
    case shares
}

/// How money changed hands, for a settlement or a dues payment.
package enum PaymentMethod: String, Codable, Sendable, CaseIterable {
    case cash
    case bankTransfer = "bank_transfer"
    case venmo
    case paypal
    case other
}

/// One member's part of an expense (or, for a settlement, the payee receiving it).
package struct LedgerSplit: Codable, Sendable, Equatable {
    package var userId: UUID
    /// What they owe the payer, in minor units.
    package var amount: Int64
    /// What was asked for them: the exact amount, basis points or shares; null for `equal`.
    @ExplicitNull package var share: Int64?

    package init(userId: UUID, amount: Int64, share: Int64?) {
        self.userId = userId
        self.amount = amount
        self.share = share
    }
}

/// An expense or a settlement in a community's ledger. Every split's member owes the payer
/// (`paidBy`) their split; a settlement is `paidBy` paying `paidTo`, with one split of the whole
/// amount for the payee.
package struct LedgerTransaction: Codable, Sendable, Equatable {
    package var id: UUID
    package var communityId: UUID
    package var type: TransactionType
    package var description: String
    /// In the currency's minor units (cents for USD, yen for JPY).
    package var totalAmount: Int64
    package var currency: String
    package var paidBy: UUID
    /// The payee of a settlement; null for an expense.
    @ExplicitNull package var paidTo: UUID?
    package var category: ExpenseCategory
    /// How an expense was split; null for a settlement.
    @ExplicitNull package var splitMethod: SplitMethod?
    /// How a settlement was paid; null for an expense.
    @ExplicitNull package var method: PaymentMethod?
    package var splits: [LedgerSplit]
    /// The day it happened, `YYYY-MM-DD`.
    package var transactionDate: String
    @ExplicitNull package var linkedEventId: UUID?
    @ExplicitNull package var receiptUrl: String?
    /// A receipt uploaded to this community (`GET /api/v1/media/{id}` serves it).
    @ExplicitNull package var receiptMediaId: UUID?
    package var createdBy: UUID
    /// Raised by every change; `GET …/history` lists each.
    package var revision: Int
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, communityId: UUID, type: TransactionType, description: String, totalAmount: Int64, currency: String,
        paidBy: UUID, paidTo: UUID?, category: ExpenseCategory, splitMethod: SplitMethod?, method: PaymentMethod?,
        splits: [LedgerSplit], transactionDate: String, linkedEventId: UUID?, receiptUrl: String?,
        receiptMediaId: UUID? = nil,
        createdBy: UUID,
        revision: Int, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.type = type
        self.description = description
        self.totalAmount = totalAmount
        self.currency = currency
        self.paidBy = paidBy
        self.paidTo = paidTo
        self.category = category
        self.splitMethod = splitMethod
        self.method = method
        self.splits = splits
        self.transactionDate = transactionDate
        self.linkedEventId = linkedEventId
        self.receiptUrl = receiptUrl
        self.receiptMediaId = receiptMediaId
        self.createdBy = createdBy
        self.revision = revision
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What one change did to a transaction or dues: who, when, and the thing before and after it
/// (`before` is null for the creation; a deletion's `after` is the last state).
package struct FinanceRevision: Codable, Sendable, Equatable {
    package var revision: Int
    package var action: String
    package var changedBy: UUID
    package var changedAt: Date
    /// The fields whose values differ between `before` and `after`.
    package var changedFields: [String]
    @ExplicitNull package var before: [String: JSONValue]?
    package var after: [String: JSONValue]

    package init(
        revision: Int, action: String, changedBy: UUID, changedAt: Date, changedFields: [String],
        before: [String: JSONValue]?, after: [String: JSONValue]
    ) {
        self.revision = revision
        self.action = action
        self.changedBy = changedBy
        self.changedAt = changedAt
        self.changedFields = changedFields
        self.before = before
        self.after = after
    }
}

/// One member's net in one currency: positive, the others owe them; negative, they owe.
package struct MemberBalance: Codable, Sendable, Equatable {
    package var userId: UUID
    package var net: Int64

    package init(userId: UUID, net: Int64) {
        self.userId = userId
        self.net = net
    }
}

/// `from` owes `to` this much, unsimplified (what their own expenses and settlements leave).
package struct Debt: Codable, Sendable, Equatable {
    package var from: UUID
    package var to: UUID
    package var amount: Int64

    package init(from: UUID, to: UUID, amount: Int64) {
        self.from = from
        self.to = to
        self.amount = amount
    }
}

/// A community's balances in one currency.
package struct CurrencyBalances: Codable, Sendable, Equatable {
    package var currency: String
    /// Every member with a non-zero net.
    package var members: [MemberBalance]
    /// Who owes whom, pair by pair.
    package var debts: [Debt]

    package init(currency: String, members: [MemberBalance], debts: [Debt]) {
        self.currency = currency
        self.members = members
        self.debts = debts
    }
}

/// One expense or settlement behind a suggested transfer, and how much of the transfer it
/// accounts for.
package struct TransferReason: Codable, Sendable, Equatable {
    package var transactionId: UUID
    package var type: TransactionType
    package var description: String
    package var transactionDate: String
    package var amount: Int64

    package init(
        transactionId: UUID, type: TransactionType, description: String, transactionDate: String, amount: Int64
    ) {
        self.transactionId = transactionId
        self.type = type
        self.description = description
        self.transactionDate = transactionDate
        self.amount = amount
    }
}

/// Where a payer can pay a transfer in one tap, from the payee's handles.
package struct PayLinks: Codable, Sendable, Equatable {
    @ExplicitNull package var venmo: String?
    @ExplicitNull package var paypal: String?

    package init(venmo: String?, paypal: String?) {
        self.venmo = venmo
        self.paypal = paypal
    }
}

/// A suggested payment that, with the others, settles everyone, and why it is owed: the
/// payer's side (their shares of expenses others paid, newest first, those the payee paid
/// first) and the payee's side (what they paid for others), each adding up to `amount`.
package struct SuggestedTransfer: Codable, Sendable, Equatable {
    package var from: UUID
    package var to: UUID
    package var amount: Int64
    package var payerSide: [TransferReason]
    package var payeeSide: [TransferReason]
    package var payLinks: PayLinks

    package init(
        from: UUID, to: UUID, amount: Int64, payerSide: [TransferReason], payeeSide: [TransferReason],
        payLinks: PayLinks
    ) {
        self.from = from
        self.to = to
        self.amount = amount
        self.payerSide = payerSide
        self.payeeSide = payeeSide
        self.payLinks = payLinks
    }
}

/// `GET …/balances/simplified`, one currency.
package struct CurrencySettlement: Codable, Sendable, Equatable {
    package var currency: String
    package var transfers: [SuggestedTransfer]
    /// `minimum` (the fewest transfers there are), `greedy` (more than 20 members owe or are
    /// owed), or `pairwise` (the community does not simplify).
    package var method: String

    package init(currency: String, transfers: [SuggestedTransfer], method: String) {
        self.currency = currency
        self.transfers = transfers
        self.method = method
    }
}

/// A member's payment handles in a community, shown to those who owe them.
package struct PaymentHandles: Codable, Sendable, Equatable {
    @ExplicitNull package var venmo: String?
    @ExplicitNull package var paypal: String?

    package init(venmo: String?, paypal: String?) {
        self.venmo = venmo
        self.paypal = paypal
    }
}

// MARK: Dues

/// How often dues fall due again.
package enum DuesRecurrence: String, Codable, Sendable, CaseIterable {
    case none
    case monthly
    case yearly
}

/// Where one member stands with one period of dues.
package enum DuesStatus: String, Codable, Sendable, CaseIterable {
    case paid
    case partial
    case unpaid
    case overdue
    case waived
}

/// Money recorded against a member's dues.
package struct DuesPayment: Codable, Sendable, Equatable {
    package var id: UUID
    package var userId: UUID
    /// The period's due date, `YYYY-MM-DD`.
    package var period: String
    package var amount: Int64
    package var method: PaymentMethod
    @ExplicitNull package var note: String?
    package var recordedBy: UUID
    package var paidAt: Date

    package init(
        id: UUID, userId: UUID, period: String, amount: Int64, method: PaymentMethod, note: String?, recordedBy: UUID,
        paidAt: Date
    ) {
        self.id = id
        self.userId = userId
        self.period = period
        self.amount = amount
        self.method = method
        self.note = note
        self.recordedBy = recordedBy
        self.paidAt = paidAt
    }
}

/// One member's standing for one period of dues.
package struct DuesMemberStatus: Codable, Sendable, Equatable {
    package var userId: UUID
    package var period: String
    package var amountDue: Int64
    package var amountPaid: Int64
    package var status: DuesStatus
    package var payments: [DuesPayment]
    @ExplicitNull package var waivedBy: UUID?
    @ExplicitNull package var waivedReason: String?

    package init(
        userId: UUID, period: String, amountDue: Int64, amountPaid: Int64, status: DuesStatus,
        payments: [DuesPayment], waivedBy: UUID?, waivedReason: String?
    ) {
        self.userId = userId
        self.period = period
        self.amountDue = amountDue
        self.amountPaid = amountPaid
        self.status = status
        self.payments = payments
        self.waivedBy = waivedBy
        self.waivedReason = waivedReason
    }
}

/// How many members stand where, for one period.
package struct DuesSummary: Codable, Sendable, Equatable {
    package var paid = 0
    package var partial = 0
    package var unpaid = 0
    package var overdue = 0
    package var waived = 0
    package var collected: Int64 = 0
    package var outstanding: Int64 = 0

    package init() {}

    package mutating func add(_ member: DuesMemberStatus) {
        switch member.status {
        case .paid: paid += 1
        case .partial: partial += 1
        case .unpaid: unpaid += 1
        case .overdue: overdue += 1
        case .waived: waived += 1
        }
        // Saturating: a summary is a figure to show, and no sum of payments may trap a read.
        collected = Self.sum(collected, member.amountPaid)
        if member.status != .waived {
            outstanding = Self.sum(outstanding, max(0, member.amountDue - member.amountPaid))
        }
    }

    private static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : total
    }
}

/// Dues a community collects, with the reader's own standing.
package struct Dues: Codable, Sendable, Equatable {
    package var id: UUID
    package var communityId: UUID
    package var name: String
    @ExplicitNull package var description: String?
    /// What the current period owes, in minor units.
    package var amount: Int64
    package var currency: String
    /// The first period's due date, `YYYY-MM-DD`.
    package var dueDate: String
    package var recurrence: DuesRecurrence
    /// Those who owe it; null for every member.
    @ExplicitNull package var memberIds: [UUID]?
    package var isActive: Bool
    /// The period members are paying now: the first one not yet past, or the last.
    package var currentPeriod: String
    /// The reader's periods still open (unpaid, partial or overdue) and the current one; empty
    /// when the dues are not theirs.
    package var mine: [DuesMemberStatus]
    /// The current period, across the members who owe it.
    package var summary: DuesSummary
    package var createdBy: UUID
    package var revision: Int
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, communityId: UUID, name: String, description: String?, amount: Int64, currency: String,
        dueDate: String, recurrence: DuesRecurrence, memberIds: [UUID]?, isActive: Bool, currentPeriod: String,
        mine: [DuesMemberStatus], summary: DuesSummary, createdBy: UUID, revision: Int, createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.name = name
        self.description = description
        self.amount = amount
        self.currency = currency
        self.dueDate = dueDate
        self.recurrence = recurrence
        self.memberIds = memberIds
        self.isActive = isActive
        self.currentPeriod = currentPeriod
        self.mine = mine
        self.summary = summary
        self.createdBy = createdBy
        self.revision = revision
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `GET …/dues/{duesId}`: the dues and every member's standing for one period.
package struct DuesDetail: Codable, Sendable, Equatable {
    package var dues: Dues
    package var period: String
    package var members: [DuesMemberStatus]

    package init(dues: Dues, period: String, members: [DuesMemberStatus]) {
        self.dues = dues
        self.period = period
        self.members = members
    }
}

/// The finances' limits.
package enum FinanceLimits {
    /// The largest amount one expense, settlement, dues or payment may carry, in minor units:
    /// far beyond any club's money, and far enough below a 64-bit total that no balance can
    /// overflow.
    package static let maxAmount: Int64 = 1_000_000_000_000_000
    package static let descriptionLength = 500
    package static let noteLength = 500
    package static let splitMembers = 200
    package static let duesNameLength = 200
    package static let duesDescriptionLength = 2_000
    package static let handleLength = 64
    /// Shares per member, for a `shares` split.
    package static let maxShares: Int64 = 1_000_000
    /// Basis points in 100 %.
    package static let wholePercent: Int64 = 10_000
}
