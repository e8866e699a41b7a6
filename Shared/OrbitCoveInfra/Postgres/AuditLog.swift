import Foundation
import Logging
import NIOCore
import OrbitCoveModels
import PostgresNIO

/// Appends to `audit_log`, inside the caller's transaction so the entry commits (or not)
/// together with the change it describes.
package enum AuditLog {
    package static func record(
        _ action: String, userId: UUID, communityId: UUID? = nil, targetType: String? = nil, targetId: UUID? = nil,
        metadata: [String: JSONValue] = [:], ipAddress: String?, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let metadataJSON = String(decoding: try JSONCoding.encoder.encode(metadata), as: UTF8.self)
        // Only a well-formed address reaches the INET column; anything else is left out.
        let address = ipAddress.flatMap { (try? SocketAddress(ipAddress: $0, port: 0)) != nil ? $0 : nil }
        try await connection.run(
            """
            INSERT INTO audit_log (community_id, user_id, action, target_type, target_id, metadata, ip_address)
            VALUES (\(communityId), \(userId), \(action), \(targetType), \(targetId), \(metadataJSON)::jsonb,
                    \(address)::inet)
            """, logger: logger)
    }
}
