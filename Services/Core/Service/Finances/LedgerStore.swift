import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The ledger's reads, each in a transaction entered as the reader.
struct LedgerStore: Sendable {
    let database: Database
    let logger: Logger

    /// Newest first by (created_at, id).
    static let order = Keyset(.newestFirst, time: "t.created_at", id: "t.id")

    /// What `GET …/transactions` narrows the ledger to.
    struct Filter: Sendable {
        /// Entries this member paid, received or has a split of.
        var member: UUID?
        var category: ExpenseCategory?
        var currency: String?
        var type: TransactionType?

        init(_ request: Request) throws {
            let query = request.uri.queryParameters
            var problems: [String: String] = [:]
            if let raw = query.get("member") {
                member = UUID(uuidString: raw)
                if member == nil { problems["member"] = "must be a user id" }
            }
            if let raw = query.get("category") {
                category = ExpenseCategory(rawValue: raw)
                if category == nil {
                    problems["category"] =
                        "must be one of \(ExpenseCategory.allCases.map(\.rawValue).joined(separator: ", "))"
                }
            }
            if let raw = query.get("currency") {
                currency = Currencies.isKnown(raw) ? raw : nil
                if currency == nil { problems["currency"] = "must be an ISO 4217 currency code in capitals" }
            }
            if let raw = query.get("type") {
                type = TransactionType(rawValue: raw)
                if type == nil { problems["type"] = "must be expense or settlement" }
            }
            if !problems.isEmpty { throw APIError.validation(problems) }
        }
    }

    func transactions(
        of communityId: UUID, viewer: UUID, filter: Filter, page: PageRequest
    ) async throws -> [(LedgerTransaction, PageCursor)] {
        try await database.transaction(userId: viewer) { connection in
            try await Self.page(of: communityId, filter: filter, page: page, on: connection, logger: logger)
        }
    }

    static func page(
        of communityId: UUID, filter: Filter, page: PageRequest, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(LedgerTransaction, PageCursor)] {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: LedgerRows.columns) FROM transactions t \(unescaped: LedgerRows.joins)
            WHERE t.community_id = \(communityId) AND t.deleted_at IS NULL
              AND (\(filter.member)::uuid IS NULL OR t.paid_by = \(filter.member) OR t.paid_to = \(filter.member)
                   OR EXISTS (SELECT 1 FROM splits s WHERE s.transaction_id = t.id AND s.user_id = \(filter.member)))
              AND (\(filter.category?.rawValue)::text IS NULL OR t.category::text = \(filter.category?.rawValue))
              AND (\(filter.currency)::text IS NULL OR t.currency = \(filter.currency))
              AND (\(filter.type?.rawValue)::text IS NULL OR t.type::text = \(filter.type?.rawValue))
            \(page: page, in: Self.order)
            """, logger: logger)
        var entries: [(LedgerTransaction, PageCursor)] = []
        for try await row in rows {
            let entry = try LedgerRows.read(row)
            entries.append((entry, PageCursor(createdAt: entry.createdAt, id: entry.id)))
        }
        return entries
    }

    func transaction(_ id: UUID, in communityId: UUID, viewer: UUID) async throws -> LedgerTransaction {
        try await database.transaction(userId: viewer) { connection in
            guard let entry = try await LedgerRows.transaction(id, in: communityId, on: connection, logger: logger)
            else { throw FinanceErrors.transactionNotFound }
            return entry
        }
    }

    /// Every revision of a transaction, oldest first, each with what it changed; a deleted
    /// transaction's history stays readable.
    func history(of id: UUID, in communityId: UUID, viewer: UUID) async throws -> [FinanceRevision] {
        try await database.transaction(userId: viewer) { connection in
            try await Self.history(of: id, kind: "transaction", in: communityId, on: connection, logger: logger)
        }
    }

    static func history(
        of id: UUID, kind: String, in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [FinanceRevision] {
        let rows = try await connection.query(
            """
            SELECT revision, action, changed_by, changed_at, snapshot::text AS snapshot FROM finance_revisions
            WHERE subject_id = \(id) AND community_id = \(communityId) AND subject_kind = \(kind)
            ORDER BY revision
            """, logger: logger)
        var revisions: [FinanceRevision] = []
        var before: [String: JSONValue]?
        for try await row in rows {
            var cells = RowReader(row)
            let revision: Int = try cells.next("revision")
            let action: String = try cells.next("action")
            let changedBy: UUID = try cells.next("changed_by")
            let changedAt: Date = try cells.next("changed_at")
            let text: String = try cells.next("snapshot")
            guard case .object(let after) = try JSONCoding.decoder.decode(JSONValue.self, from: Data(text.utf8)) else {
                throw APIError.internalError
            }
            let bookkeeping: Set<String> = ["revision", "updatedAt", "createdAt", "summary", "mine", "currentPeriod"]
            let changed = after.keys.filter { !bookkeeping.contains($0) && before?[$0] != after[$0] }.sorted()
            revisions.append(
                FinanceRevision(
                    revision: revision, action: action, changedBy: changedBy, changedAt: changedAt,
                    changedFields: before == nil || action == "deleted" ? [] : changed, before: before, after: after))
            before = after
        }
        guard !revisions.isEmpty else {
            throw kind == "transaction" ? FinanceErrors.transactionNotFound : FinanceErrors.duesNotFound
        }
        return revisions
    }

    // MARK: Balances

    /// Each member's net and who owes whom, per currency, from the kept rows (not summed over
    /// the ledger).
    /// `GET …/balances`: one statement that reads the kept rows and writes the response's JSON
    /// where they are. Through rows, PostgresNIO and `Encodable`, a 50-member community's
    /// 2,269 pairs cost core 6 ms of CPU a request, more than PostgreSQL's work; the text is
    /// only ids, integers and currency codes, so no escaping is needed. The bytes are the
    /// encoder's for ``balances(of:currency:on:logger:)`` (`FinanceTests` compares them).
    func balances(of communityId: UUID, viewer: UUID, currency: String?) async throws -> RawJSON {
        try await database.transaction(userId: viewer) { connection in
            var binds = PostgresBindings()
            binds.append(communityId)
            binds.append(currency)
            for try await text in try await connection.query(
                PostgresQuery(unsafeSQL: Self.balancesJSONQuery, binds: binds), logger: logger
            ).decode(String.self) {
                return RawJSON(bytes: Array(text.utf8))
            }
            throw APIError.internalError
        }
    }

    /// The JSON of every currency's balances, as the encoder writes `[CurrencyBalances]`
    /// (sorted keys, lower-case ids): `$1` the community, `$2` a currency or NULL for all. Each
    /// table is read once and grouped by currency: written with a subquery per currency,
    /// PostgreSQL estimated a cost of 600,000 and JIT-compiled it on every run (7 a second).
    static let balancesJSONQuery = """
        WITH debts AS (
            SELECT p.currency, string_agg(
                '{"amount":' || abs(p.amount) || ',"from":"'
                || CASE WHEN p.amount > 0 THEN p.low_user ELSE p.high_user END || '","to":"'
                || CASE WHEN p.amount > 0 THEN p.high_user ELSE p.low_user END || '"}',
                ',' ORDER BY abs(p.amount) DESC, p.low_user, p.high_user) AS body
            FROM ledger_pairs p
            WHERE p.community_id = $1 AND p.amount <> 0 AND ($2::text IS NULL OR p.currency = $2)
            GROUP BY p.currency
        ), nets AS (
            SELECT b.currency, string_agg('{"net":' || b.net || ',"userId":"' || b.user_id || '"}', ','
                                          ORDER BY b.net DESC, b.user_id) AS body
            FROM ledger_balances b
            WHERE b.community_id = $1 AND b.net <> 0 AND ($2::text IS NULL OR b.currency = $2)
            GROUP BY b.currency
        )
        SELECT '[' || coalesce(string_agg(
            '{"currency":"' || currency || '","debts":[' || coalesce(d.body, '') || '],"members":['
            || coalesce(n.body, '') || ']}', ',' ORDER BY currency COLLATE "C"), '') || ']'
        FROM debts d FULL JOIN nets n USING (currency)
        """

    static let balancesQuery = """
        SELECT b.currency, b.user_id, b.net FROM ledger_balances b
        WHERE b.community_id = $1 AND b.net <> 0 AND ($2::text IS NULL OR b.currency = $2)
        ORDER BY b.currency, b.net DESC, b.user_id
        """
    static let debtsQuery = """
        SELECT p.currency, p.low_user, p.high_user, p.amount FROM ledger_pairs p
        WHERE p.community_id = $1 AND p.amount <> 0 AND ($2::text IS NULL OR p.currency = $2)
        ORDER BY p.currency, abs(p.amount) DESC, p.low_user, p.high_user
        """

    static func balances(
        of communityId: UUID, currency: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [CurrencyBalances] {
        var binds = PostgresBindings()
        binds.append(communityId)
        binds.append(currency)
        // Read cell by cell (a tuple decode looks its types up on every one of thousands of rows).
        var byCurrency: [String: CurrencyBalances] = [:]
        for try await row in try await connection.query(
            PostgresQuery(unsafeSQL: balancesQuery, binds: binds), logger: logger)
        {
            var cells = RowReader(row)
            let code: String = try cells.next("currency")
            let member = MemberBalance(userId: try cells.next("user_id"), net: try cells.next("net"))
            byCurrency[code, default: CurrencyBalances(currency: code, members: [], debts: [])].members.append(member)
        }
        for try await row in try await connection.query(
            PostgresQuery(unsafeSQL: debtsQuery, binds: binds), logger: logger)
        {
            var cells = RowReader(row)
            let code: String = try cells.next("currency")
            let low: UUID = try cells.next("low_user")
            let high: UUID = try cells.next("high_user")
            let amount: Int64 = try cells.next("amount")
            let debt =
                amount > 0 ? Debt(from: low, to: high, amount: amount) : Debt(from: high, to: low, amount: -amount)
            byCurrency[code, default: CurrencyBalances(currency: code, members: [], debts: [])].debts.append(debt)
        }
        return byCurrency.keys.sorted().compactMap { byCurrency[$0] }
    }

    /// Transfers that settle everyone, per currency, each explained by the entries behind it:
    /// the fewest there are (at most 20 members owing or owed; greedy beyond), or pair by pair
    /// when the community does not simplify. The rows are read in one transaction and the
    /// names of what explains them in another; the settling in between holds no connection.
    /// The exact search (up to 2^20 subsets a currency) is spent on at most
    /// ``exactBudget`` subsets a call, smallest ledgers first; a currency past it is settled
    /// greedily, so a community using many currencies cannot make a call cost seconds.
    func simplified(
        of communityId: UUID, viewer: UUID, currency: String?, simplify: Bool
    ) async throws -> [CurrencySettlement] {
        let ledgers = try await database.transaction(userId: viewer) { connection in
            var ledgers: [(CurrencyBalances, [DebtSimplification.Edge])] = []
            for ledger in try await Self.balances(of: communityId, currency: currency, on: connection, logger: logger) {
                ledgers.append(
                    (
                        ledger,
                        try await Self.edges(in: communityId, currency: ledger.currency, on: connection, logger: logger)
                    ))
            }
            return ledgers
        }
        var budget = Self.exactBudget
        var plans:
            [(
                currency: String, transfers: [DebtSimplification.Transfer], method: String,
                reasons: [(payerSide: [DebtSimplification.Portion], payeeSide: [DebtSimplification.Portion])]
            )] = []
        for (ledger, edges) in ledgers.sorted(by: { $0.0.members.count < $1.0.members.count }) {
            let nets = Dictionary(uniqueKeysWithValues: ledger.members.map { ($0.userId, $0.net) })
            let (transfers, method): ([DebtSimplification.Transfer], String)
            if !simplify {
                (transfers, method) = (
                    ledger.debts.map { DebtSimplification.Transfer(from: $0.from, to: $0.to, amount: $0.amount) },
                    "pairwise"
                )
            } else if nets.count <= 20, budget >= 1 << nets.count {
                budget -= 1 << nets.count
                (transfers, method) = DebtSimplification.settle(nets)
            } else {
                (transfers, method) = (DebtSimplification.greedy(nets), "greedy")
            }
            plans.append((ledger.currency, transfers, method, DebtSimplification.explain(transfers, edges: edges)))
        }
        plans.sort { $0.currency < $1.currency }
        return try await database.transaction(userId: viewer) { connection in
            let named = Set(
                plans.flatMap {
                    $0.reasons.flatMap { $0.payerSide.map(\.transactionId) + $0.payeeSide.map(\.transactionId) }
                })
            let entries = try await Self.entries(Array(named), on: connection, logger: logger)
            let handles = try await Self.handles(
                of: Array(Set(plans.flatMap { $0.transfers.map(\.to) })), in: communityId, on: connection,
                logger: logger)
            let names = try await LedgerWriter.names(
                Array(Set(plans.flatMap { $0.transfers.map(\.from) })), on: connection, logger: logger)
            func explained(_ side: [DebtSimplification.Portion]) -> [TransferReason] {
                side.compactMap { item in
                    entries[item.transactionId].map {
                        TransferReason(
                            transactionId: item.transactionId, type: $0.type, description: $0.description,
                            transactionDate: $0.date, amount: item.amount)
                    }
                }
            }
            return plans.map { plan in
                CurrencySettlement(
                    currency: plan.currency,
                    transfers: zip(plan.transfers, plan.reasons).map { transfer, reason in
                        SuggestedTransfer(
                            from: transfer.from, to: transfer.to, amount: transfer.amount,
                            payerSide: explained(reason.payerSide), payeeSide: explained(reason.payeeSide),
                            payLinks: Currencies.payLinks(
                                handles: handles[transfer.to], amount: transfer.amount, currency: plan.currency,
                                note: "OrbitCove: from \(names[transfer.from] ?? "a member")"))
                    }, method: plan.method)
            }
        }
    }

    /// Subsets the exact search may visit in one call: four full 20-member searches.
    static let exactBudget = 4 << 20

    /// Every live split in `currency` where someone owes someone else, newest entry first.
    static func edges(
        in communityId: UUID, currency: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [DebtSimplification.Edge] {
        var edges: [DebtSimplification.Edge] = []
        for try await (transaction, debtor, creditor, amount) in try await connection.query(
            """
            SELECT s.transaction_id, s.user_id, s.payer_id, s.amount
            FROM splits s JOIN transactions t ON t.id = s.transaction_id
            WHERE s.community_id = \(communityId) AND s.live AND s.currency = \(currency)
              AND s.user_id <> s.payer_id AND s.amount > 0
            ORDER BY t.created_at DESC, t.id DESC, s.position
            """, logger: logger
        ).decode((UUID, UUID, UUID, Int64).self) {
            edges.append(
                DebtSimplification.Edge(transactionId: transaction, debtor: debtor, creditor: creditor, amount: amount))
        }
        return edges
    }

    static func entries(
        _ ids: [UUID], on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID: (type: TransactionType, description: String, date: String)] {
        var entries: [UUID: (type: TransactionType, description: String, date: String)] = [:]
        for try await (id, type, description, date) in try await connection.query(
            """
            SELECT id, type::text, description::text, transaction_date::text FROM transactions WHERE id = ANY(\(ids))
            """, logger: logger
        ).decode((UUID, String, String, String).self) {
            entries[id] = (TransactionType(rawValue: type) ?? .expense, description, date)
        }
        return entries
    }

    static func handles(
        of users: [UUID], in communityId: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID: PaymentHandles] {
        var handles: [UUID: PaymentHandles] = [:]
        for try await (user, venmo, paypal) in try await connection.query(
            """
            SELECT user_id, payment_handles ->> 'venmo', payment_handles ->> 'paypal' FROM members
            WHERE community_id = \(communityId) AND user_id = ANY(\(users))
            """, logger: logger
        ).decode((UUID, String?, String?).self) {
            handles[user] = PaymentHandles(venmo: venmo, paypal: paypal)
        }
        return handles
    }
}
