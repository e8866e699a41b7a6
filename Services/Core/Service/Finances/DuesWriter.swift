import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Every change to dues (admins'), each one `writes.change`: the rows (whose triggers log the
/// dues for sync), a revision members can read, and `dues.changed` to both `notifications` (a
/// `payment_request` when dues are set up or their amount changes) and `reminders` (due-date
/// and overdue reminders, stopped by a payment or a waiver).
struct DuesWriter: Sendable {
    let writes: CommunityWrites
    let logger: Logger

    struct Input: Sendable {
        var name: String?
        var description: Change<String> = .keep
        var amount: Int64?
        var currency: String?
        var dueDate: String?
        var recurrence: DuesRecurrence?
        var memberIds: Change<[UUID]> = .keep
        var isActive: Bool?
    }

    struct Payment: Sendable {
        var userId: UUID
        var amount: Int64
        var method: PaymentMethod
        var note: String?
        var period: String?
    }

    func create(_ input: Input, in granted: CommunityGate.Granted, request: RequestFacts) async throws -> Dues {
        let (community, actor) = (granted.record, granted.userId)
        guard let name = input.name, let amount = input.amount, let currency = input.currency,
            let dueDate = input.dueDate
        else { throw APIError.internalError }
        return try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            try await Self.checkOwers(input.memberIds.value, in: community.id, on: connection, logger: logger)
            var created: UUID?
            for try await id in try await connection.query(
                """
                INSERT INTO dues (community_id, name, description, amount, currency, due_date, recurrence, member_ids,
                                  created_by)
                VALUES (\(community.id), \(name), \(input.description.value), \(amount), \(currency), \(dueDate)::date,
                        \((input.recurrence ?? .none).rawValue), \(input.memberIds.value), \(actor))
                RETURNING id
                """, logger: logger
            ).decode(UUID.self) {
                created = id
            }
            guard let id = created else { throw APIError.internalError }
            change.touched(1)
            try await connection.run(
                "INSERT INTO dues_amounts (dues_id, effective_from, amount) VALUES (\(id), \(dueDate)::date, \(amount))",
                logger: logger)
            let dues = try await record(id, "created", in: granted, on: connection)
            announce(&change, dues, .created, in: granted)
            return dues
        }
    }

    /// Changes the name, description, who owes, whether it is collecting, or the amount (which
    /// applies from the current period on; earlier periods keep what they owed).
    func edit(
        _ duesId: UUID, _ input: Input, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws
        -> Dues
    {
        let (community, actor) = (granted.record, granted.userId)
        return try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            let before = try await locked(duesId, in: granted, on: connection)
            try await Self.checkOwers(input.memberIds.value, in: community.id, on: connection, logger: logger)
            let updated = try await connection.changedRows(
                """
                UPDATE dues SET
                    name = coalesce(\(input.name), name),
                    description = CASE WHEN \(input.description.tag) = 'keep' THEN description
                                       ELSE \(input.description.value) END,
                    member_ids = CASE WHEN \(input.memberIds.tag) = 'keep' THEN member_ids ELSE \(input.memberIds.value) END,
                    is_active = coalesce(\(input.isActive), is_active),
                    revision = revision + 1, updated_at = NOW()
                WHERE id = \(duesId) AND community_id = \(community.id) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard updated == 1 else { throw FinanceErrors.duesNotFound }
            change.touched(updated)
            if let amount = input.amount, amount != before.amount {
                try await connection.run(
                    """
                    INSERT INTO dues_amounts (dues_id, effective_from, amount)
                    VALUES (\(duesId), \(before.currentPeriod)::date, \(amount))
                    ON CONFLICT (dues_id, effective_from) DO UPDATE SET amount = excluded.amount
                    """, logger: logger)
            }
            let dues = try await record(duesId, "edited", in: granted, on: connection)
            announce(&change, dues, dues.amount != before.amount ? .amountChanged : .updated, in: granted)
            return dues
        }
    }

    func delete(_ duesId: UUID, in granted: CommunityGate.Granted, request: RequestFacts) async throws {
        let (community, actor) = (granted.record, granted.userId)
        try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            var dues = try await locked(duesId, in: granted, on: connection)
            let removed = try await connection.changedRows(
                """
                UPDATE dues SET deleted_at = NOW(), is_active = FALSE, revision = revision + 1, updated_at = NOW()
                WHERE id = \(duesId) AND community_id = \(community.id) AND deleted_at IS NULL
                RETURNING 1
                """, logger: logger)
            guard removed == 1 else { throw FinanceErrors.duesNotFound }
            change.touched(removed)
            dues.revision += 1
            dues.isActive = false
            try await insertRevision(dues, "deleted", by: actor, on: connection)
            change.audit("dues.deleted", target: ("dues", duesId), metadata: ["name": .string(dues.name)])
            announce(&change, dues, .deleted, in: granted)
        }
    }

    /// Records a payment (partial payments add up) for one member and period (the current one
    /// unless named).
    func pay(
        _ duesId: UUID, _ payment: Payment, in granted: CommunityGate.Granted, request: RequestFacts
    )
        async throws -> DuesMemberStatus
    {
        try await standingChange(duesId, user: payment.userId, period: payment.period, in: granted, request: request) {
            standing, connection in
            guard standing.status != .waived else { throw FinanceErrors.duesWaived }
            // Never more than is owed: a period's payments stay within its amount.
            let owed = max(0, standing.amountDue - standing.amountPaid)
            guard payment.amount <= owed else {
                throw APIError.validation(["amount": "is more than the \(owed) still owed for \(standing.period)"])
            }
            let touched = try await connection.changedRows(
                """
                INSERT INTO dues_payments (dues_id, user_id, amount_paid, recorded_by, payment_method, notes, period)
                VALUES (\(duesId), \(payment.userId), \(payment.amount), \(granted.userId), \(payment.method.rawValue),
                        \(payment.note), \(standing.period)::date)
                RETURNING 1
                """, logger: logger)
            return (.paymentRecorded, touched)
        }
    }

    /// Waives a member's period; waiving it again (another admin, a new reason) makes it that
    /// admin's waiver, as the second wall only lets an admin write a waiver in their own name.
    func waive(
        _ duesId: UUID, user: UUID, period: String?, reason: String?, in granted: CommunityGate.Granted,
        request: RequestFacts
    ) async throws -> DuesMemberStatus {
        try await standingChange(duesId, user: user, period: period, in: granted, request: request) {
            standing, connection in
            let touched = try await connection.changedRows(
                """
                INSERT INTO dues_waivers (dues_id, user_id, period, waived_by, reason)
                VALUES (\(duesId), \(user), \(standing.period)::date, \(granted.userId), \(reason))
                ON CONFLICT (dues_id, period, user_id) DO UPDATE
                    SET reason = excluded.reason, waived_by = excluded.waived_by, waived_at = excluded.waived_at
                RETURNING 1
                """, logger: logger)
            return (.waived, touched)
        }
    }

    func withdrawWaiver(
        _ duesId: UUID, user: UUID, period: String?, in granted: CommunityGate.Granted, request: RequestFacts
    ) async throws -> DuesMemberStatus {
        try await standingChange(duesId, user: user, period: period, in: granted, request: request) {
            standing, connection in
            let touched = try await connection.changedRows(
                """
                DELETE FROM dues_waivers WHERE dues_id = \(duesId) AND user_id = \(user) AND period = \(standing.period)::date
                RETURNING 1
                """, logger: logger)
            return (.waiverWithdrawn, touched)
        }
    }

    // MARK: Steps

    /// One member's standing changed: checked (they owe these dues, the period is one of
    /// theirs), changed by `body` under the dues' lock, read again, and announced.
    private func standingChange(
        _ duesId: UUID, user: UUID, period: String?, in granted: CommunityGate.Granted, request: RequestFacts,
        _ body: @Sendable (DuesMemberStatus, PostgresConnection) async throws -> (DuesChange, touched: Int)
    ) async throws -> DuesMemberStatus {
        let (community, actor) = (granted.record, granted.userId)
        return try await writes.change(in: community.id, by: actor, request: request) { change, connection in
            _ = try await locked(duesId, in: granted, on: connection)
            let before = try await DuesStore.detail(
                duesId, in: community.id, viewer: actor, timezone: community.settings.timezone, period: period,
                on: connection, logger: logger)
            guard let standing = before.members.first(where: { $0.userId == user }),
                before.dues.memberIds?.contains(user) ?? true
            else {
                let isMember = try await LedgerWriter.checkMembersQuietly(
                    [user], in: community.id, on: connection, logger: logger)
                throw isMember ? FinanceErrors.notOwed : FinanceErrors.memberNotFound("userId")
            }
            let (what, touched) = try await body(standing, connection)
            change.touched(touched)
            let after = try await DuesStore.detail(
                duesId, in: community.id, viewer: actor, timezone: community.settings.timezone,
                period: standing.period, on: connection, logger: logger)
            guard let now = after.members.first(where: { $0.userId == user }) else { throw APIError.internalError }
            change.announce(
                message(after.dues, what, in: granted, period: standing.period, user: user, status: now.status))
            change.announce(
                message(after.dues, what, in: granted, period: standing.period, user: user, status: now.status),
                to: .reminders)
            return now
        }
    }

    /// The live dues, locked for the change, as they stand; `DUES_NOT_FOUND` otherwise.
    private func locked(
        _ duesId: UUID, in granted: CommunityGate.Granted, on connection: PostgresConnection
    )
        async throws -> Dues
    {
        let found = try await connection.query(
            """
            SELECT 1 FROM dues WHERE id = \(duesId) AND community_id = \(granted.communityId) AND deleted_at IS NULL
            FOR UPDATE
            """, logger: logger
        ).collect().count
        guard found == 1 else { throw FinanceErrors.duesNotFound }
        let ledger = try await DuesStore.one(
            duesId, in: granted.communityId, timezone: granted.record.settings.timezone, on: connection,
            logger: logger)
        return ledger.dues(ledger.rows[0], viewer: granted.userId)
    }

    private func record(
        _ duesId: UUID, _ action: String, in granted: CommunityGate.Granted, on connection: PostgresConnection
    ) async throws -> Dues {
        let ledger = try await DuesStore.one(
            duesId, in: granted.communityId, timezone: granted.record.settings.timezone, on: connection,
            logger: logger)
        let dues = ledger.dues(ledger.rows[0], viewer: granted.userId)
        try await insertRevision(dues, action, by: granted.userId, on: connection)
        return dues
    }

    private func insertRevision(
        _ dues: Dues, _ action: String, by actor: UUID, on connection: PostgresConnection
    )
        async throws
    {
        let snapshot = String(decoding: try JSONCoding.encoder.encode(dues), as: UTF8.self)
        try await connection.run(
            """
            INSERT INTO finance_revisions (community_id, subject_kind, subject_id, revision, action, changed_by, snapshot)
            VALUES (\(dues.communityId), 'dues', \(dues.id), \(dues.revision), \(action), \(actor), \(snapshot)::jsonb)
            """, logger: logger)
    }

    private func announce(
        _ change: inout ChangeRecord, _ dues: Dues, _ what: DuesChange, in granted: CommunityGate.Granted
    ) {
        let payload = message(dues, what, in: granted, period: dues.currentPeriod, user: nil, status: nil)
        change.announce(payload)
        change.announce(payload, to: .reminders)
    }

    private func message(
        _ dues: Dues, _ what: DuesChange, in granted: CommunityGate.Granted, period: String, user: UUID?,
        status: DuesStatus?
    ) -> DuesChanged {
        DuesChanged(
            communityId: granted.communityId, communityName: granted.record.name, duesId: dues.id, name: dues.name,
            change: what, period: period, amount: dues.amount, currency: dues.currency, recurrence: dues.recurrence,
            memberIds: dues.memberIds, userId: user, status: status, changedBy: granted.userId)
    }

    /// Those named as owing must be current members.
    static func checkOwers(
        _ ids: [UUID]?, in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let ids else { return }
        try await LedgerWriter.checkMembers(
            ids.enumerated().map { ("memberIds[\($0)]", $1) }, in: community, on: connection, logger: logger)
    }
}

extension LedgerWriter {
    /// Whether every one of `ids` is a current member.
    static func checkMembersQuietly(
        _ ids: [UUID], in community: UUID, on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        do {
            try await checkMembers(ids.map { ("userId", $0) }, in: community, on: connection, logger: logger)
            return true
        } catch let error as APIError where error.code == "MEMBER_NOT_FOUND" {
            return false
        }
    }
}
