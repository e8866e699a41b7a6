import Foundation
import OrbitCoveInfra
import PostgresNIO
import Testing

/// The clients honour what an operator asks of TLS: libpq's `sslmode` for PostgreSQL and
/// `amqps://` for RabbitMQ, against the local servers' TLS listeners, whose certificate (from
/// the stack's own CA, in `.local/tls/`) names `localhost` and not `127.0.0.1`.
@Suite struct TLSTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let ca = repository.appendingPathComponent(".local/tls/ca.pem").path

    /// `ORBITCOVE_TEST_DATABASE_URL` with another host and query.
    static func databaseURL(host: String, _ query: String) throws -> URL {
        var components = try #require(URLComponents(url: TestEnvironment.databaseURL, resolvingAgainstBaseURL: false))
        components.host = host
        components.query = query
        return try #require(components.url)
    }

    /// Whether the session is encrypted, or nil when no connection could be made within
    /// `wait`: short where the connection must fail (a failure waits it out), long where it
    /// must succeed (the whole suite runs at once, and a busy machine connects slowly).
    static func encrypted(_ url: URL, wait: Duration = .seconds(15)) async throws -> Bool? {
        let database = try Database(
            url: url, maxConnections: 1, connectionWait: wait, logger: TestEnvironment.logger)
        return try await withServices([database.service()]) {
            do {
                let rows = try await database.systemQuery("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                return try rows.first?.decode(Bool.self)
            } catch {
                return nil
            }
        }
    }

    @Test func postgresVerifiesTheCertificateAsTheSSLModeSays() async throws {
        // The right CA and the name on the certificate: encrypted.
        #expect(
            try await Self.encrypted(Self.databaseURL(host: "localhost", "sslmode=verify-full&sslrootcert=\(Self.ca)"))
                == true)
        // The right CA but another name: verify-full refuses, verify-ca accepts.
        #expect(
            try await Self.encrypted(
                Self.databaseURL(host: "127.0.0.1", "sslmode=verify-full&sslrootcert=\(Self.ca)"), wait: .seconds(3))
                == nil)
        #expect(
            try await Self.encrypted(Self.databaseURL(host: "127.0.0.1", "sslmode=verify-ca&sslrootcert=\(Self.ca)"))
                == true)
        // Without our CA the chain is not trusted.
        #expect(
            try await Self.encrypted(Self.databaseURL(host: "localhost", "sslmode=verify-full"), wait: .seconds(3))
                == nil)
        #expect(
            try await Self.encrypted(Self.databaseURL(host: "localhost", "sslmode=verify-ca"), wait: .seconds(3)) == nil
        )
        // require encrypts without checking; disable does not encrypt.
        #expect(try await Self.encrypted(Self.databaseURL(host: "127.0.0.1", "sslmode=require")) == true)
        #expect(try await Self.encrypted(Self.databaseURL(host: "127.0.0.1", "sslmode=disable")) == false)
    }

    @Test func unknownSSLModesAndUnreadableCAsStopStartUp() throws {
        #expect(throws: ConfigurationError.self) {
            try Database.configuration(from: try Self.databaseURL(host: "localhost", "sslmode=verify_full"))
        }
        #expect(throws: ConfigurationError.self) {
            try Database.configuration(
                from: try Self.databaseURL(host: "localhost", "sslmode=verify-full&sslrootcert=/nonexistent.pem"))
        }
    }

    static func amqpURL(host: String, _ query: String) throws -> URL {
        var components = try #require(URLComponents(url: TestEnvironment.amqpURL, resolvingAgainstBaseURL: false))
        components.scheme = "amqps"
        components.host = host
        components.port = 55671
        components.query = query
        return try #require(components.url)
    }

    @Test func amqpsVerifiesTheBrokersCertificate() async throws {
        func connects(_ url: URL) async -> Bool {
            guard let settings = try? AMQPSettings(url: url, connectionName: "tls-test") else { return false }
            return (try? await AMQPProbe.check(settings)) != nil
        }
        #expect(await connects(try Self.amqpURL(host: "localhost", "cacertfile=\(Self.ca)")))
        #expect(!(await connects(try Self.amqpURL(host: "127.0.0.1", "cacertfile=\(Self.ca)"))))
        #expect(!(await connects(try Self.amqpURL(host: "localhost", ""))))
        #expect(await connects(try Self.amqpURL(host: "127.0.0.1", "verify=verify_none")))
        #expect(throws: ConfigurationError.self) {
            try AMQPSettings(url: try Self.amqpURL(host: "localhost", "verify=sometimes"), connectionName: "x")
        }
    }
}
