import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// One select list and one join for every read of a ledger row (a page, one transaction, sync,
/// the export), read cell by cell: the transaction and its splits, in the order their members
/// were listed.
enum LedgerRows {
    static let columns = """
        t.id, t.community_id, t.type::text AS type, t.description::text AS description, t.total_amount,
        t.currency::text AS currency, t.paid_by, t.paid_to, t.category::text AS category, t.split_method,
        t.settlement_method, t.transaction_date::text AS transaction_date, t.linked_event_id,
        t.receipt_url::text AS receipt_url, t.receipt_media_id, t.created_by, t.revision, t.created_at, t.updated_at,
        coalesce(sp.user_ids, '{}') AS split_users, coalesce(sp.amounts, '{}') AS split_amounts,
        coalesce(sp.shares, '{}') AS split_shares
        """

    static let joins = """
        LEFT JOIN LATERAL (
            SELECT array_agg(s.user_id ORDER BY s.position, s.user_id) AS user_ids,
                   array_agg(s.amount ORDER BY s.position, s.user_id) AS amounts,
                   array_agg(coalesce(s.share, -1) ORDER BY s.position, s.user_id) AS shares
            FROM splits s WHERE s.transaction_id = t.id
        ) sp ON TRUE
        """

    static func read(_ row: PostgresRow) throws -> LedgerTransaction {
        var cells = RowReader(row)
        return try read(&cells)
    }

    static func read(_ cells: inout RowReader) throws -> LedgerTransaction {
        let id: UUID = try cells.next("id")
        let communityId: UUID = try cells.next("community_id")
        let type: String = try cells.next("type")
        let description: String = try cells.next("description")
        let total: Int64 = try cells.next("total_amount")
        let currency: String = try cells.next("currency")
        let paidBy: UUID = try cells.next("paid_by")
        let paidTo: UUID? = try cells.next("paid_to")
        let category: String = try cells.next("category")
        let splitMethod: String? = try cells.next("split_method")
        let method: String? = try cells.next("settlement_method")
        let date: String = try cells.next("transaction_date")
        let linkedEventId: UUID? = try cells.next("linked_event_id")
        let receiptUrl: String? = try cells.next("receipt_url")
        let receiptMediaId: UUID? = try cells.next("receipt_media_id")
        let createdBy: UUID = try cells.next("created_by")
        let revision: Int = try cells.next("revision")
        let createdAt: Date = try cells.next("created_at")
        let updatedAt: Date = try cells.next("updated_at")
        let users: [UUID] = try cells.next("split_users")
        let amounts: [Int64] = try cells.next("split_amounts")
        let shares: [Int64] = try cells.next("split_shares")
        let splits = users.indices.map { index in
            LedgerSplit(userId: users[index], amount: amounts[index], share: shares[index] < 0 ? nil : shares[index])
        }
        return LedgerTransaction(
            id: id, communityId: communityId, type: TransactionType(rawValue: type) ?? .expense,
            description: description, totalAmount: total, currency: currency, paidBy: paidBy, paidTo: paidTo,
            category: ExpenseCategory(rawValue: category) ?? .other,
            splitMethod: splitMethod.flatMap(SplitMethod.init(rawValue:)),
            method: method.flatMap(PaymentMethod.init(rawValue:)), splits: splits, transactionDate: date,
            linkedEventId: linkedEventId, receiptUrl: receiptUrl,
            receiptMediaId: receiptMediaId, createdBy: createdBy, revision: revision,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    /// The transaction as the transaction's reader sees it, if it is in `communityId` and live.
    static func transaction(
        _ id: UUID, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> LedgerTransaction? {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: columns) FROM transactions t \(unescaped: joins)
            WHERE t.id = \(id) AND t.community_id = \(communityId) AND t.deleted_at IS NULL
            """, logger: logger)
        for try await row in rows { return try read(row) }
        return nil
    }
}
