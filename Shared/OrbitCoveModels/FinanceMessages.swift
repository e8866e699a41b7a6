import Foundation

/// An expense was added: each member with a share of it (but the payer and whoever added it)
/// hears what they owe and to whom.
package struct ExpenseAdded: MessagePayload, Equatable {
    package static let messageType = "expense.added"
    package static let messageVersion = 1

    package struct Share: Codable, Sendable, Equatable {
        package var userId: UUID
        package var amount: Int64

        package init(userId: UUID, amount: Int64) {
            self.userId = userId
            self.amount = amount
        }
    }

    package var communityId: UUID
    package var communityName: String
    package var transactionId: UUID
    package var description: String
    package var currency: String
    package var totalAmount: Int64
    package var paidBy: UUID
    package var paidByName: String
    package var addedBy: UUID
    package var shares: [Share]

    package init(
        communityId: UUID, communityName: String, transactionId: UUID, description: String, currency: String,
        totalAmount: Int64, paidBy: UUID, paidByName: String, addedBy: UUID, shares: [Share]
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.transactionId = transactionId
        self.description = description
        self.currency = currency
        self.totalAmount = totalAmount
        self.paidBy = paidBy
        self.paidByName = paidByName
        self.addedBy = addedBy
        self.shares = shares
    }
}

/// A settlement was recorded: the payee hears they were paid (and the payer, when someone else
/// recorded it).
package struct SettlementRecorded: MessagePayload, Equatable {
    package static let messageType = "settlement.recorded"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var transactionId: UUID
    package var from: UUID
    package var fromName: String
    package var to: UUID
    package var toName: String
    package var amount: Int64
    package var currency: String
    package var recordedBy: UUID

    package init(
        communityId: UUID, communityName: String, transactionId: UUID, from: UUID, fromName: String, to: UUID,
        toName: String, amount: Int64, currency: String, recordedBy: UUID
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.transactionId = transactionId
        self.from = from
        self.fromName = fromName
        self.to = to
        self.toName = toName
        self.amount = amount
        self.currency = currency
        self.recordedBy = recordedBy
    }
}

/// What happened to dues, for the notifications service (a `payment_request` when dues are
/// set up or their amount changes) and the reminders service (due-date and overdue reminders,
/// stopped by a payment or a waiver).
package enum DuesChange: String, Codable, Sendable, CaseIterable {
    case created
    /// The amount changed (and perhaps more): those who owe are asked again.
    case amountChanged = "amount_changed"
    /// Another field changed: the name, description, who owes or whether it is collecting.
    case updated
    case deleted
    case paymentRecorded = "payment_recorded"
    case waived
    case waiverWithdrawn = "waiver_withdrawn"
}

/// Dues were set up, changed or removed, or one member's standing with them changed. Sent to
/// both `notifications` and `reminders`.
package struct DuesChanged: MessagePayload, Equatable {
    package static let messageType = "dues.changed"
    package static let messageVersion = 1

    package var communityId: UUID
    package var communityName: String
    package var duesId: UUID
    package var name: String
    package var change: DuesChange
    /// The period concerned (the current one for a change to the dues), `YYYY-MM-DD`.
    package var period: String
    package var amount: Int64
    package var currency: String
    package var recurrence: DuesRecurrence
    /// Those who owe the dues; null for every member.
    package var memberIds: [UUID]?
    /// The member whose payment or waiver this is.
    package var userId: UUID?
    /// That member's standing for the period after the change.
    package var status: DuesStatus?
    package var changedBy: UUID

    package init(
        communityId: UUID, communityName: String, duesId: UUID, name: String, change: DuesChange, period: String,
        amount: Int64, currency: String, recurrence: DuesRecurrence, memberIds: [UUID]?, userId: UUID?,
        status: DuesStatus?, changedBy: UUID
    ) {
        self.communityId = communityId
        self.communityName = communityName
        self.duesId = duesId
        self.name = name
        self.change = change
        self.period = period
        self.amount = amount
        self.currency = currency
        self.recurrence = recurrence
        self.memberIds = memberIds
        self.userId = userId
        self.status = status
        self.changedBy = changedBy
    }
}
