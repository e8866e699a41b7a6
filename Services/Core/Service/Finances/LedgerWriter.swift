import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Every change to the ledger, each one `writes.change`: the transaction and its splits (whose
/// triggers keep the balances and log the change for sync), a revision members can read, the
/// audit entry when an admin changes someone else's entry, and the messages (`expense.added`,
/// `settlement.recorded`). Each write takes the community's ledger lock first, so concurrent
/// writers queue rather than deadlock on the balance rows.
struct LedgerWriter: Sendable {
    let writes: CommunityWrites
    let logger: Logger

    func createExpense(
        _ input: LedgerInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> LedgerTransaction
    {
        let (community, actor) = (granted.record, granted.userId)
        guard let total = input.totalAmount, let currency = input.currency, let split = input.split,
            let description = input.description
        else { throw APIError.internalError }
        let payer = input.paidBy ?? actor
        return try await Self.withinLimits {
            try await writes.change(in: community.id, by: actor, request: request) { change, connection in
                try await Self.lockLedger(community.id, on: connection, logger: logger)
                try await Self.checkMembers(
                    [("paidBy", payer)] + split.members.enumerated().map { ("split.members[\($0)].userId", $1.userId) },
                    in: community.id, on: connection, logger: logger)
                try await PostWriter.checkEvent(
                    input.linkedEventId.value, in: community.id, on: connection, logger: logger)
                let receipt = try await MediaReferences.check(
                    input.receiptMediaId.value.map { [$0] } ?? [], for: .receipt, in: community.id,
                    field: "receiptMediaId",
                    on: connection, logger: logger
                ).first
                let splits = try Self.allocate(total, split)
                let date = input.transactionDate ?? LedgerDay.today(in: community.settings.timezone)
                let rows = try await connection.query(
                    """
                    INSERT INTO transactions (community_id, created_by, type, description, total_amount, currency, paid_by,
                                              category, receipt_url, receipt_media_id, linked_event_id, transaction_date,
                                              split_method)
                    VALUES (\(community.id), \(actor), 'expense', \(description), \(total), \(currency), \(payer),
                            \((input.category ?? .other).rawValue)::expense_category, \(input.receiptUrl.value), \(receipt),
                            \(input.linkedEventId.value), \(date)::date, \(split.method.rawValue))
                    RETURNING id
                    """, logger: logger)
                var created: UUID?
                for try await id in rows.decode(UUID.self) { created = id }
                guard let id = created else { throw APIError.internalError }
                change.touched(1)
                try await Self.insertSplits(splits, of: id, on: connection, logger: logger)
                let entry = try await Self.recordRevision(
                    of: id, in: community.id, action: "created", by: actor, on: connection, logger: logger)
                let names = try await Self.names([payer], on: connection, logger: logger)
                change.announce(
                    ExpenseAdded(
                        communityId: community.id, communityName: community.name, transactionId: id,
                        description: description, currency: currency, totalAmount: total, paidBy: payer,
                        paidByName: names[payer] ?? "Someone", addedBy: actor,
                        shares: splits.filter { $0.userId != payer && $0.amount > 0 }.map {
                            ExpenseAdded.Share(userId: $0.userId, amount: $0.amount)
                        }))
                return entry
            }
        }
    }

    /// A settlement is recorded, changed and removed by one of its two parties or an admin, as
    /// the second wall has it (migration 0037): the member who recorded it as an admin and has
    /// since been demoted no longer may.
    static func requireParty(to parties: (from: UUID, to: UUID?), in granted: CommunityGate.Granted) throws(APIError) {
        let actor = granted.userId
        guard actor == parties.from || actor == parties.to || granted.membership.role == .admin else {
            throw APIError.forbidden
        }
    }

    /// `from` paid `to`: recorded by either of them or an admin.
    func createSettlement(
        _ input: LedgerInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> LedgerTransaction
    {
        let (community, actor) = (granted.record, granted.userId)
        guard let from = input.paidBy, let to = input.paidTo, let amount = input.totalAmount,
            let currency = input.currency, let method = input.method
        else { throw APIError.internalError }
        try Self.requireParty(to: (from, to), in: granted)
        return try await Self.withinLimits {
            try await writes.change(in: community.id, by: actor, request: request) { change, connection in
                try await Self.lockLedger(community.id, on: connection, logger: logger)
                // A member who left may still owe or be owed what was split before, and settles
                // it (migration 0070); as they can no longer see the ledger, no more than what
                // `from` owes `to` in that currency.
                try await Self.checkMembers(
                    [("from", from), ("to", to)], in: community.id, includingFormer: true, on: connection,
                    logger: logger)
                let current = try await MemberStore.currentMembers(
                    [from, to], in: community.id, on: connection, logger: logger)
                if current.count < 2 {
                    let owed = try await Self.owed(
                        by: from, to: to, in: currency, community: community.id, on: connection, logger: logger)
                    guard amount <= owed else { throw FinanceErrors.exceedsDebt(max(owed, 0)) }
                }
                let date = input.transactionDate ?? LedgerDay.today(in: community.settings.timezone)
                let rows = try await connection.query(
                    """
                    INSERT INTO transactions (community_id, created_by, type, description, total_amount, currency, paid_by,
                                              paid_to, category, transaction_date, settlement_method)
                    VALUES (\(community.id), \(actor), 'settlement', \(input.description ?? ""), \(amount), \(currency),
                            \(from), \(to), 'other', \(date)::date, \(method.rawValue))
                    RETURNING id
                    """, logger: logger)
                var created: UUID?
                for try await id in rows.decode(UUID.self) { created = id }
                guard let id = created else { throw APIError.internalError }
                change.touched(1)
                try await Self.insertSplits(
                    [LedgerSplit(userId: to, amount: amount, share: nil)], of: id, on: connection, logger: logger)
                let entry = try await Self.recordRevision(
                    of: id, in: community.id, action: "created", by: actor, on: connection, logger: logger)
                let names = try await Self.names([from, to], on: connection, logger: logger)
                change.announce(
                    SettlementRecorded(
                        communityId: community.id, communityName: community.name, transactionId: id, from: from,
                        fromName: names[from] ?? "Someone", to: to, toName: names[to] ?? "Someone", amount: amount,
                        currency: currency, recordedBy: actor))
                return entry
            }
        }
    }

    /// Changes an expense or a settlement (its creator or an admin). A new total without a new
    /// split splits it again the way it was split (equal, percentages and shares follow; exact
    /// amounts that no longer add up are refused).
    func edit(
        _ id: UUID, _ input: LedgerInput, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> LedgerTransaction {
        let (community, actor) = (granted.record, granted.userId)
        return try await Self.withinLimits {
            try await writes.change(in: community.id, by: actor, request: request) { change, connection in
                try await Self.lockLedger(community.id, on: connection, logger: logger)
                let current = try await Self.current(id, in: community.id, on: connection, logger: logger)
                try granted.require(
                    .editTransaction, on: OwnedContent(createdBy: current.createdBy, createdAt: current.createdAt))
                if current.type == .settlement {
                    try Self.requireParty(to: (current.paidBy, current.paidTo), in: granted)
                }
                try input.check(type: current.type)
                // An amount is in minor units: a currency with other decimals needs it said again.
                if let currency = input.currency, input.totalAmount == nil,
                    Currencies.minorUnits[currency] != Currencies.minorUnits[current.currency]
                {
                    throw APIError.validation([
                        "totalAmount":
                            "is required with a new currency whose minor unit differs from \(current.currency)'s"
                    ])
                }
                let total = input.totalAmount ?? current.totalAmount
                var splits = current.splits
                var newMembers: [(String, UUID)] = []
                if let payer = input.paidBy, payer != current.paidBy { newMembers.append(("paidBy", payer)) }
                switch current.type {
                case .expense:
                    let split =
                        input.split
                        ?? SplitRequest(
                            method: current.splitMethod ?? .exact, members: current.splits.map { ($0.userId, $0.share) }
                        )
                    if input.split != nil || total != current.totalAmount {
                        splits = try Self.allocate(total, split)
                    }
                    let known = Set(current.splits.map(\.userId))
                    for (index, member) in (input.split?.members ?? []).enumerated()
                    where !known.contains(member.userId) {
                        newMembers.append(("split.members[\(index)].userId", member.userId))
                    }
                case .settlement:
                    splits = current.splits.map { LedgerSplit(userId: $0.userId, amount: total, share: nil) }
                }
                try await Self.checkMembers(newMembers, in: community.id, on: connection, logger: logger)
                try await keepFormerMembers(
                    from: current,
                    to: (input.paidBy ?? current.paidBy, total, input.currency ?? current.currency, splits),
                    in: community.id, on: connection)
                // Only what the edit adds is checked, as for a post: an expense whose event or
                // receipt was deleted since keeps it, and a client sending back the whole
                // expense it read is not refused for it.
                if input.linkedEventId.value != current.linkedEventId {
                    try await PostWriter.checkEvent(
                        input.linkedEventId.value, in: community.id, on: connection, logger: logger)
                }
                if let receipt = input.receiptMediaId.value, receipt != current.receiptMediaId {
                    _ = try await MediaReferences.check(
                        [receipt], for: .receipt, in: community.id, field: "receiptMediaId", on: connection,
                        logger: logger)
                }
                let method = input.split?.method ?? current.splitMethod
                let updated = try await connection.changedRows(
                    """
                    UPDATE transactions SET
                        description = CASE WHEN \(input.clearsDescription) THEN '' ELSE coalesce(\(input.description), description) END,
                        total_amount = \(total),
                        currency = coalesce(\(input.currency), currency),
                        paid_by = coalesce(\(input.paidBy), paid_by),
                        category = coalesce(\(input.category?.rawValue)::expense_category, category),
                        transaction_date = coalesce(\(input.transactionDate)::date, transaction_date),
                        linked_event_id = CASE WHEN \(input.linkedEventId.tag) = 'keep' THEN linked_event_id
                                               ELSE \(input.linkedEventId.value) END,
                        receipt_url = CASE WHEN \(input.receiptUrl.tag) = 'keep' THEN receipt_url
                                           ELSE \(input.receiptUrl.value) END,
                        receipt_media_id = CASE WHEN \(input.receiptMediaId.tag) = 'keep' THEN receipt_media_id
                                                ELSE \(input.receiptMediaId.value) END,
                        split_method = CASE WHEN type = 'expense' THEN \(method?.rawValue) END,
                        settlement_method = coalesce(\(input.method?.rawValue), settlement_method),
                        revision = revision + 1, updated_at = NOW()
                    WHERE id = \(id) AND community_id = \(community.id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger)
                guard updated == 1 else { throw APIError.forbidden }
                change.touched(updated)
                if splits != current.splits {
                    try await connection.run("DELETE FROM splits WHERE transaction_id = \(id)", logger: logger)
                    try await Self.insertSplits(splits, of: id, on: connection, logger: logger)
                }
                if actor != current.createdBy {
                    change.audit("transaction.edited", target: ("transaction", id))
                }
                return try await Self.recordRevision(
                    of: id, in: community.id, action: "edited", by: actor, on: connection, logger: logger)
            }
        }
    }

    /// One who has left can no longer see the ledger, so a change to an entry may leave them
    /// owing less or being owed more in it (their net in it: what they paid less their share),
    /// never the other way, nor move it to another currency or payer; `edited` nil is the entry
    /// deleted.
    /// A settlement with them stays within what was owed between the two before it, as when it
    /// was recorded. (A settlement's payer is owed its amount by its payee.)
    private func keepFormerMembers(
        from current: LedgerTransaction,
        to edited: (payer: UUID, total: Int64, currency: String, splits: [LedgerSplit])?,
        in community: UUID, on connection: PostgresConnection
    ) async throws {
        func net(_ user: UUID, payer: UUID, total: Int64, splits: [LedgerSplit]) -> Int64 {
            (payer == user ? total : 0) - splits.filter { $0.userId == user }.reduce(0) { $0 + $1.amount }
        }
        let involved = Set(
            [current.paidBy] + [edited?.payer].compactMap { $0 }
                + (current.splits + (edited?.splits ?? [])).map(\.userId))
        let members = try await MemberStore.currentMembers(
            Array(involved), in: community, on: connection, logger: logger)
        let former = involved.subtracting(members).sorted { $0.uuidString < $1.uuidString }
        for user in former {
            let before = net(user, payer: current.paidBy, total: current.totalAmount, splits: current.splits)
            let after = edited.map { net(user, payer: $0.payer, total: $0.total, splits: $0.splits) } ?? 0
            // Nor to whom: another payer would make what they owe someone else's.
            let moved =
                before != 0 && edited.map { $0.currency != current.currency || $0.payer != current.paidBy } == true
            guard after >= before && !moved else { throw FinanceErrors.formerMemberShare(user) }
        }
        if current.type == .settlement, !former.isEmpty, let edited, let payee = current.paidTo,
            edited.total > current.totalAmount
        {
            let owed = try await Self.owed(
                by: current.paidBy, to: payee, in: current.currency, community: community, on: connection,
                logger: logger)
            let limit = max(owed, 0) + current.totalAmount
            guard edited.total <= limit else { throw FinanceErrors.exceedsDebt(limit) }
        }
    }

    /// A soft delete: the entry leaves the ledger and the balances at once; its history stays.
    func delete(_ id: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let (community, actor) = (granted.record, granted.userId)
        try await Self.withinLimits {
            try await writes.change(in: community.id, by: actor, request: request) { change, connection in
                try await Self.lockLedger(community.id, on: connection, logger: logger)
                let current = try await Self.current(id, in: community.id, on: connection, logger: logger)
                try granted.require(
                    .deleteTransaction, on: OwnedContent(createdBy: current.createdBy, createdAt: current.createdAt))
                if current.type == .settlement {
                    try Self.requireParty(to: (current.paidBy, current.paidTo), in: granted)
                }
                try await keepFormerMembers(from: current, to: nil, in: community.id, on: connection)
                let removed = try await connection.changedRows(
                    """
                    UPDATE transactions SET deleted_at = NOW(), revision = revision + 1, updated_at = NOW()
                    WHERE id = \(id) AND community_id = \(community.id) AND deleted_at IS NULL
                    RETURNING 1
                    """, logger: logger)
                guard removed == 1 else { throw APIError.forbidden }
                change.touched(removed)
                var last = current
                last.revision += 1
                try await Self.insertRevision(last, action: "deleted", by: actor, on: connection, logger: logger)
                if actor != current.createdBy {
                    change.audit(
                        "transaction.deleted", target: ("transaction", id),
                        metadata: ["createdBy": .string(current.createdBy.lowercasedString)])
                }
            }
        }
    }

    // MARK: Steps

    /// Runs a change, answering `LEDGER_LIMIT` when a balance would pass what 64 bits hold
    /// (PostgreSQL's overflow, or the balance tables' check that keeps -2^63 out).
    static func withinLimits<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PSQLError
            where error.serverInfo?[.sqlState] == "22003"
            || (error.serverInfo?[.sqlState] == "23514"
                && ["ledger_balances_negatable", "ledger_pairs_negatable"].contains(
                    error.serverInfo?[.constraintName] ?? ""))
        {
            throw FinanceErrors.ledgerFull
        }
    }

    /// The community's ledger lock, then a hold on its membership (``MemberStore/hold(_:on:logger:)``):
    /// who is a member when a change checks it is who is a member when it commits.
    static func lockLedger(_ community: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("SELECT ledger_lock(\(community))", logger: logger)
        try await MemberStore.hold(community, on: connection, logger: logger)
    }

    /// The live transaction as it stands; `TRANSACTION_NOT_FOUND` otherwise. No row lock: the
    /// ledger lock every change takes first already serialises changes to it (and `FOR UPDATE`
    /// would hide it from a member who may read but not change it, who must hear `403`).
    static func current(
        _ id: UUID, in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> LedgerTransaction {
        guard let current = try await LedgerRows.transaction(id, in: community, on: connection, logger: logger) else {
            throw FinanceErrors.transactionNotFound
        }
        return current
    }

    /// What `debtor` owes `creditor` in `currency` (negative: what they are owed), from the
    /// pairs the triggers keep (`ledger_pairs`: positive when the lower id owes the higher).
    static func owed(
        by debtor: UUID, to creditor: UUID, in currency: String, community: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int64 {
        let rows = try await connection.query(
            """
            SELECT coalesce(sum(CASE WHEN p.low_user = \(debtor) THEN p.amount ELSE -p.amount END), 0)::bigint
            FROM ledger_pairs p
            WHERE p.community_id = \(community) AND p.currency = \(currency)
              AND ((p.low_user = \(debtor) AND p.high_user = \(creditor)) OR (p.low_user = \(creditor) AND p.high_user = \(debtor)))
            """, logger: logger)
        for try await owed in rows.decode(Int64.self) { return owed }
        return 0
    }

    /// Every user named must be a current member (or a former one, `includingFormer`); the first
    /// who is not is refused by field.
    static func checkMembers(
        _ named: [(field: String, userId: UUID)], in community: UUID, includingFormer: Bool = false,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !named.isEmpty else { return }
        let members = try await MemberStore.currentMembers(
            named.map(\.userId), in: community, includingFormer: includingFormer, on: connection, logger: logger)
        if let stranger = named.first(where: { !members.contains($0.userId) }) {
            throw FinanceErrors.memberNotFound(stranger.field)
        }
    }

    static func allocate(_ total: Int64, _ split: SplitRequest) throws -> [LedgerSplit] {
        switch SplitAllocation.allocate(total: total, method: split.method, members: split.members) {
        case .success(let splits): return splits
        case .failure(let problem): throw APIError.validation([problem.field: problem.message])
        }
    }

    static func insertSplits(
        _ splits: [LedgerSplit], of id: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.run(
            """
            INSERT INTO splits (transaction_id, user_id, amount, share, position)
            SELECT \(id), s.user_id, s.amount, nullif(s.share, -1), s.position - 1
            FROM unnest(\(splits.map(\.userId)), \(splits.map(\.amount)), \(splits.map { $0.share ?? -1 }))
                WITH ORDINALITY AS s(user_id, amount, share, position)
            """, logger: logger)
    }

    /// Reads the transaction as it now stands and keeps it as a revision.
    static func recordRevision(
        of id: UUID, in community: UUID, action: String, by actor: UUID, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> LedgerTransaction {
        guard let entry = try await LedgerRows.transaction(id, in: community, on: connection, logger: logger) else {
            throw APIError.internalError
        }
        try await insertRevision(entry, action: action, by: actor, on: connection, logger: logger)
        return entry
    }

    static func insertRevision(
        _ entry: LedgerTransaction, action: String, by actor: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let snapshot = String(decoding: try JSONCoding.encoder.encode(entry), as: UTF8.self)
        try await connection.run(
            """
            INSERT INTO finance_revisions (community_id, subject_kind, subject_id, revision, action, changed_by, snapshot)
            VALUES (\(entry.communityId), 'transaction', \(entry.id), \(entry.revision), \(action), \(actor),
                    \(snapshot)::jsonb)
            """, logger: logger)
    }

    static func names(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> [UUID: String] {
        var names: [UUID: String] = [:]
        for try await (id, name) in try await connection.query(
            "SELECT id, display_name::text FROM users WHERE id = ANY(\(ids))", logger: logger
        ).decode((UUID, String).self) {
            names[id] = name
        }
        return names
    }
}
