import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// A member's own payment handles in one community (`members.payment_handles`), from which
/// `GET …/balances/simplified` makes the pay links of the transfers owed to them.
struct PaymentHandleStore: Sendable {
    let database: Database
    let logger: Logger

    func handles(of userId: UUID, in communityId: UUID) async throws -> PaymentHandles {
        try await database.transaction(userId: userId) { connection in
            try await LedgerStore.handles(of: [userId], in: communityId, on: connection, logger: logger)[userId]
                ?? PaymentHandles(venmo: nil, paypal: nil)
        }
    }

    /// Sets (`.set`), removes (`.clear`) or keeps each handle, in one statement.
    func update(
        venmo: Change<String>, paypal: Change<String>, of userId: UUID, in communityId: UUID
    ) async throws -> PaymentHandles {
        try await database.transaction(userId: userId) { connection in
            try await connection.query(
                """
                UPDATE members SET payment_handles = jsonb_strip_nulls(payment_handles || jsonb_build_object(
                    'venmo', CASE WHEN \(venmo.tag) = 'keep' THEN payment_handles -> 'venmo' ELSE to_jsonb(\(venmo.value)::text) END,
                    'paypal', CASE WHEN \(paypal.tag) = 'keep' THEN payment_handles -> 'paypal' ELSE to_jsonb(\(paypal.value)::text) END))
                WHERE community_id = \(communityId) AND user_id = \(userId) AND left_at IS NULL
                """, logger: logger)
            return try await LedgerStore.handles(of: [userId], in: communityId, on: connection, logger: logger)[userId]
                ?? PaymentHandles(venmo: nil, paypal: nil)
        }
    }
}
