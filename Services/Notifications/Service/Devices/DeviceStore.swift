import Foundation
import Logging
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The caller's registered devices. Registering takes a token from whoever had it before
/// (`app_register_device`, past row-level security for the asking user only).
struct DeviceStore: Sendable {
    let database: Database
    let logger: Logger

    static let notFound = APIError.notFound("DEVICE_NOT_FOUND", "No such device")

    struct Registration {
        var token: String
        var environment: PushEnvironment
        var bundleId: String
        var locale: String?
    }

    /// The device, and whether it is new to this user.
    func register(_ registration: Registration, for userId: UUID) async throws -> (Device, isNew: Bool) {
        try await database.transaction(userId: userId) { connection in
            let rows = try await connection.query(
                """
                SELECT token, environment, bundle_id, locale, created_at, updated_at
                FROM app_register_device(\(registration.token), \(registration.environment.rawValue),
                                         \(registration.bundleId), \(registration.locale))
                """, logger: logger)
            guard let device = try await Self.devices(rows).first else { throw APIError.internalError }
            return (device, device.createdAt == device.updatedAt)
        }
    }

    func devices(of userId: UUID) async throws -> [Device] {
        try await database.transaction(userId: userId) { connection in
            try await Self.devices(
                try await connection.query(
                    """
                    SELECT token, environment, bundle_id, locale, created_at, updated_at
                    FROM devices WHERE user_id = \(userId) ORDER BY created_at, token
                    """, logger: logger))
        }
    }

    func remove(_ token: String, of userId: UUID) async throws {
        let removed = try await database.transaction(userId: userId) { connection in
            try await connection.changedRows(
                "DELETE FROM devices WHERE token = \(token) AND user_id = \(userId) RETURNING 1", logger: logger)
        }
        guard removed > 0 else { throw Self.notFound }
    }

    private static func devices(_ rows: PostgresRowSequence) async throws -> [Device] {
        var devices: [Device] = []
        for try await row in rows {
            let columns = row.makeRandomAccess()
            devices.append(
                Device(
                    token: try columns["token"].decode(String.self),
                    environment: PushEnvironment(rawValue: try columns["environment"].decode(String.self))
                        ?? .production,
                    bundleId: try columns["bundle_id"].decode(String.self),
                    locale: try columns["locale"].decode(String?.self),
                    createdAt: try columns["created_at"].decode(Date.self),
                    updatedAt: try columns["updated_at"].decode(Date.self)))
        }
        return devices
    }
}
