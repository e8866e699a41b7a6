import Crypto
import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// Single-use tickets for opening the stream without an `Authorization` header (a browser's
/// WebSocket cannot set one): 32 random bytes, kept in Redis for 30 seconds under their
/// SHA-256 with the user and the expiry of the access token they were issued for, and taken
/// with `GETDEL`, so a ticket opens one stream on whichever instance sees it first.
package struct StreamTickets: Sendable {
    static let lifetime = 30
    static let prefix = "orbitcove:stream-ticket:"

    let redis: RedisClient

    package init(redis: RedisClient) { self.redis = redis }

    package func issue(for userId: UUID, until tokenExpiry: Date) async throws -> StreamTicket {
        let ticket = Data(randomBytes(32)).base64URLEncodedString()
        let micros = Int64((tokenExpiry.timeIntervalSince1970 * 1_000_000).rounded())
        let reply = try await redis.command([
            "SET", Self.key(ticket), "\(userId.uuidString) \(micros)", "EX", String(Self.lifetime), "NX",
        ])
        guard reply.string == "OK" else { throw APIError.unavailable("Stream tickets are unavailable; try again") }
        return StreamTicket(
            ticket: ticket, expiresAt: min(tokenExpiry, Date().addingTimeInterval(TimeInterval(Self.lifetime))))
    }

    /// The user and their token's expiry, once: nil for a ticket that is unknown, used or expired.
    func redeem(_ ticket: String) async throws -> (userId: UUID, expiresAt: Date)? {
        guard ticket.utf8.count == 43, Data(base64URLEncoded: ticket)?.count == 32 else { return nil }
        guard let value = try await redis.command(["GETDEL", Self.key(ticket)]).string else { return nil }
        let parts = value.split(separator: " ")
        guard parts.count == 2, let userId = UUID(uuidString: String(parts[0])), let micros = Int64(parts[1]) else {
            return nil
        }
        let expiresAt = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        return expiresAt > Date() ? (userId, expiresAt) : nil
    }

    private static func key(_ ticket: String) -> String { prefix + SHA256.hexDigest(of: ticket) }
}
