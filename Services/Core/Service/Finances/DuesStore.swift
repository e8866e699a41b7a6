import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// Dues as members read them: each with its periods (monthly or yearly dues fall due again),
/// what each period owes (an amount applies from the period it was set for on), and every
/// member's standing, computed from the payments and waivers at read time so a status is never
/// stale.
struct DuesStore: Sendable {
    let database: Database
    let logger: Logger

    static let order = Keyset(.newestFirst, time: "d.created_at", id: "d.id")

    /// A period's status: waived, else paid in full, else overdue once its day is past, else
    /// partly paid, else unpaid.
    static func status(due: Int64, paid: Int64, waived: Bool, period: String, today: String) -> DuesStatus {
        if waived { return .waived }
        if paid >= due { return .paid }
        if period < today { return .overdue }
        return paid > 0 ? .partial : .unpaid
    }

    /// The dues' rows and everything their standings are computed from.
    struct Ledger: Sendable {
        var rows: [Row]
        var amounts: [UUID: [(from: String, amount: Int64)]] = [:]
        var payments: [UUID: [DuesPayment]] = [:]
        /// The same payments by dues, member and period, so a standing reads only its own.
        var paid: [UUID: [UUID: [String: [DuesPayment]]]] = [:]
        var waivers: [UUID: [String: [UUID: (by: UUID, reason: String?)]]] = [:]
        /// The community's members, current and former, with the day each first joined and the
        /// day a former one left, on its clock, in joining order: dues owed by everyone fall to
        /// those who were members when a period fell due or when the dues were set up
        /// (``owers(of:period:)``).
        var members: [Membership] = [] {
            didSet { membership = Dictionary(members.map { ($0.user, $0) }) { first, _ in first } }
        }
        /// ``members`` by user.
        private(set) var membership: [UUID: Membership] = [:]
        var today: String

        struct Row: Sendable {
            var id: UUID
            var communityId: UUID
            var name: String
            var description: String?
            var currency: String
            var dueDate: String
            var recurrence: DuesRecurrence
            var memberIds: [UUID]?
            var isActive: Bool
            var createdBy: UUID
            var revision: Int
            var createdAt: Date
            var updatedAt: Date
            /// The day the dues were set up, on the community's clock.
            var setUpOn: String
        }

        struct Membership: Sendable {
            var user: UUID
            var firstJoinedOn: String
            /// When a former member left, and that day on the community's clock; nil for a
            /// current one.
            var leftAt: Date?
            var leftOn: String?
        }

        func amount(of row: Row, for period: String) -> Int64 {
            let schedule = amounts[row.id] ?? []
            return schedule.last(where: { $0.from <= period })?.amount ?? schedule.first?.amount ?? 0
        }

        /// Who owes `period` of `row`: those it names, or everyone who was a member when it fell
        /// due or the dues were set up, whichever came later (periods set up after the fact are
        /// everyone's; a later member owes from joining on; one who left and came back owes the
        /// periods in between too, for an admin to waive; one who left still owes what fell due
        /// before: leaving does not wipe a debt). Named or not, one who has left owes only what
        /// fell due while they were a member, of dues set up before they left.
        func owers(of row: Row, period: String) -> [UUID] {
            if let named = row.memberIds {
                return named.filter { user in
                    membership[user].map { Self.owes($0, row, period: period, named: true) } ?? true
                }
            }
            return members.filter { Self.owes($0, row, period: period, named: false) }.map(\.user)
        }

        /// Whether `member` owes `period` of `row`: they had joined by the day it fell due (a
        /// member the dues name owes from the start), and if they have left, the dues were set
        /// up before they left and the period fell due before or on the day they did (one who
        /// leaves that day still owes it).
        static func owes(_ member: Membership, _ row: Row, period: String, named: Bool) -> Bool {
            let due = max(period, row.setUpOn)
            guard named || member.firstJoinedOn <= due else { return false }
            guard let leftAt = member.leftAt, let leftOn = member.leftOn else { return true }
            return row.createdAt < leftAt && due <= leftOn
        }

        /// Whose standings a period of `row` shows, and its summary counts: those who owe it,
        /// then anyone else with a payment for that period (someone who paid and has since
        /// left the community): what was collected is never missing from the summary.
        func people(of row: Row, period: String) -> [UUID] {
            var users = owers(of: row, period: period)
            var listed = Set(users)
            for payment in payments[row.id] ?? []
            where payment.period == period && listed.insert(payment.userId).inserted {
                users.append(payment.userId)
            }
            return users
        }

        func standing(of user: UUID, in row: Row, period: String) -> DuesMemberStatus {
            let paid = self.paid[row.id]?[user]?[period] ?? []
            let waiver = waivers[row.id]?[period]?[user]
            let due = amount(of: row, for: period)
            // Payments are checked against what is owed, but rows written past the API must not trap.
            let total = paid.reduce(Int64(0)) { sum, payment in
                let (next, overflow) = sum.addingReportingOverflow(payment.amount)
                return overflow ? .max : next
            }
            return DuesMemberStatus(
                userId: user, period: period, amountDue: due, amountPaid: total,
                status: DuesStore.status(due: due, paid: total, waived: waiver != nil, period: period, today: today),
                payments: paid, waivedBy: waiver?.by, waivedReason: waiver?.reason)
        }

        func dues(_ row: Row, viewer: UUID) -> Dues {
            let periods = DuesSchedule.periods(from: row.dueDate, recurrence: row.recurrence, through: today)
            let current = periods.last ?? row.dueDate
            var mine: [DuesMemberStatus] = []
            let membership = self.membership[viewer]
            func viewerOwes(_ period: String) -> Bool {
                if let named = row.memberIds, !named.contains(viewer) { return false }
                return membership.map { Self.owes($0, row, period: period, named: row.memberIds != nil) } ?? false
            }
            for period in periods where viewerOwes(period) {
                let standing = standing(of: viewer, in: row, period: period)
                if period == current || [.unpaid, .partial, .overdue].contains(standing.status) {
                    mine.append(standing)
                }
            }
            var summary = DuesSummary()
            for user in people(of: row, period: current) { summary.add(standing(of: user, in: row, period: current)) }
            return Dues(
                id: row.id, communityId: row.communityId, name: row.name, description: row.description,
                amount: amount(of: row, for: current), currency: row.currency, dueDate: row.dueDate,
                recurrence: row.recurrence, memberIds: row.memberIds, isActive: row.isActive, currentPeriod: current,
                mine: mine, summary: summary, createdBy: row.createdBy, revision: row.revision,
                createdAt: row.createdAt, updatedAt: row.updatedAt)
        }
    }

    static let columns = """
        d.id, d.community_id, d.name::text AS name, d.description, d.currency, d.due_date::text AS due_date,
        d.recurrence, coalesce(d.member_ids, '{}') AS member_ids, d.member_ids IS NULL AS everyone, d.is_active,
        d.created_by, d.revision, d.created_at, d.updated_at
        """

    /// Reads the dues that `condition` picks (with its paging), and what their standings need.
    static func ledger(
        _ condition: PostgresQuery, community: UUID, timezone: String, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Ledger {
        let clock = LedgerDay.clock(of: timezone)
        var ledger = Ledger(rows: [], today: LedgerDay.day(of: Date(), on: clock))
        for try await row in try await connection.query(condition, logger: logger) {
            var cells = RowReader(row)
            let id: UUID = try cells.next("id")
            let communityId: UUID = try cells.next("community_id")
            let name: String = try cells.next("name")
            let description: String? = try cells.next("description")
            let currency: String = try cells.next("currency")
            let dueDate: String = try cells.next("due_date")
            let recurrence: String = try cells.next("recurrence")
            let memberIds: [UUID] = try cells.next("member_ids")
            let everyone: Bool = try cells.next("everyone")
            let isActive: Bool = try cells.next("is_active")
            let createdBy: UUID = try cells.next("created_by")
            let revision: Int = try cells.next("revision")
            let createdAt: Date = try cells.next("created_at")
            ledger.rows.append(
                Ledger.Row(
                    id: id, communityId: communityId, name: name, description: description, currency: currency,
                    dueDate: dueDate, recurrence: DuesRecurrence(rawValue: recurrence) ?? .none,
                    memberIds: everyone ? nil : memberIds, isActive: isActive, createdBy: createdBy,
                    revision: revision, createdAt: createdAt, updatedAt: try cells.next("updated_at"),
                    setUpOn: LedgerDay.day(of: createdAt, on: clock)))
        }
        let ids = ledger.rows.map(\.id)
        guard !ids.isEmpty else { return ledger }
        for try await (id, from, amount) in try await connection.query(
            """
            SELECT dues_id, effective_from::text, amount FROM dues_amounts WHERE dues_id = ANY(\(ids))
            ORDER BY dues_id, effective_from
            """, logger: logger
        ).decode((UUID, String, Int64).self) {
            ledger.amounts[id, default: []].append((from, amount))
        }
        let payments = try await connection.query(
            """
            SELECT id, dues_id, user_id, period::text AS period, amount_paid, payment_method, notes, recorded_by, paid_at
            FROM dues_payments WHERE dues_id = ANY(\(ids)) ORDER BY paid_at, id
            """, logger: logger)
        for try await row in payments {
            var cells = RowReader(row)
            let id: UUID = try cells.next("id")
            let duesId: UUID = try cells.next("dues_id")
            let user: UUID = try cells.next("user_id")
            let period: String = try cells.next("period")
            let amount: Int64 = try cells.next("amount_paid")
            let method: String? = try cells.next("payment_method")
            let note: String? = try cells.next("notes")
            let payment =
                DuesPayment(
                    id: id, userId: user, period: period, amount: amount,
                    method: method.flatMap(PaymentMethod.init(rawValue:)) ?? .other, note: note,
                    recordedBy: try cells.next("recorded_by"), paidAt: try cells.next("paid_at"))
            ledger.payments[duesId, default: []].append(payment)
            ledger.paid[duesId, default: [:]][user, default: [:]][period, default: []].append(payment)
        }
        for try await (duesId, user, period, by, reason) in try await connection.query(
            """
            SELECT dues_id, user_id, period::text, waived_by, reason FROM dues_waivers WHERE dues_id = ANY(\(ids))
            """, logger: logger
        ).decode((UUID, UUID, String, UUID, String?).self) {
            ledger.waivers[duesId, default: [:]][period, default: [:]][user] = (by, reason)
        }
        var members: [Ledger.Membership] = []
        for try await (user, joinedAt, leftAt) in try await connection.query(
            """
            SELECT user_id, first_joined_at, left_at FROM members
            WHERE community_id = \(community) ORDER BY first_joined_at, user_id
            """, logger: logger
        ).decode((UUID, Date, Date?).self) {
            members.append(
                Ledger.Membership(
                    user: user, firstJoinedOn: LedgerDay.day(of: joinedAt, on: clock), leftAt: leftAt,
                    leftOn: leftAt.map { LedgerDay.day(of: $0, on: clock) }))
        }
        ledger.members = members
        return ledger
    }

    func list(
        of communityId: UUID, viewer: UUID, timezone: String, page: PageRequest
    ) async throws -> [(Dues, PageCursor)] {
        try await database.transaction(userId: viewer) { connection in
            let ledger = try await Self.ledger(
                """
                SELECT \(unescaped: Self.columns) FROM dues d
                WHERE d.community_id = \(communityId) AND d.deleted_at IS NULL
                \(page: page, in: Self.order)
                """, community: communityId, timezone: timezone, on: connection, logger: logger)
            return ledger.rows.map { row in
                (ledger.dues(row, viewer: viewer), PageCursor(createdAt: row.createdAt, id: row.id))
            }
        }
    }

    func detail(
        _ duesId: UUID, in communityId: UUID, viewer: UUID, timezone: String, period: String?
    ) async throws -> DuesDetail {
        try await database.transaction(userId: viewer) { connection in
            try await Self.detail(
                duesId, in: communityId, viewer: viewer, timezone: timezone, period: period, on: connection,
                logger: logger)
        }
    }

    static func detail(
        _ duesId: UUID, in communityId: UUID, viewer: UUID, timezone: String, period: String?,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> DuesDetail {
        let ledger = try await one(duesId, in: communityId, timezone: timezone, on: connection, logger: logger)
        let row = ledger.rows[0]
        let dues = ledger.dues(row, viewer: viewer)
        let period = period ?? dues.currentPeriod
        guard DuesSchedule.isPeriod(period, from: row.dueDate, recurrence: row.recurrence) else {
            throw APIError.validation(["period": "is not a due date of these dues"])
        }
        return DuesDetail(
            dues: dues, period: period,
            members: ledger.people(of: row, period: period).map { ledger.standing(of: $0, in: row, period: period) })
    }

    /// One live dues' ledger, or `DUES_NOT_FOUND`.
    static func one(
        _ duesId: UUID, in communityId: UUID, timezone: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> Ledger {
        let ledger = try await Self.ledger(
            """
            SELECT \(unescaped: Self.columns) FROM dues d
            WHERE d.id = \(duesId) AND d.community_id = \(communityId) AND d.deleted_at IS NULL
            """, community: communityId, timezone: timezone, on: connection, logger: logger)
        guard !ledger.rows.isEmpty else { throw FinanceErrors.duesNotFound }
        return ledger
    }

    func history(of duesId: UUID, in communityId: UUID, viewer: UUID) async throws -> [FinanceRevision] {
        try await database.transaction(userId: viewer) { connection in
            try await LedgerStore.history(of: duesId, kind: "dues", in: communityId, on: connection, logger: logger)
        }
    }
}
