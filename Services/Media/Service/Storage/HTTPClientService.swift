import AsyncHTTPClient
import OrbitCoveInfra
import ServiceLifecycle

/// The HTTP client the S3 store calls through: made when the service runs, shut down after
/// the requests in flight when it stops.
package final class HTTPClientService: Service, Sendable {
    private let client = ServiceResource<HTTPClient>("S3 HTTP client")

    package init() {}

    /// The running client (waits for the start; throws once stopped).
    package func running() async throws -> HTTPClient { try await client.running() }

    package func run() async throws {
        try await client.serve(
            make: {
                HTTPClient(
                    eventLoopGroupProvider: .singleton,
                    configuration: .init(timeout: .init(connect: .seconds(5), read: .seconds(30))))
            },
            close: { try await $0.shutdown() },
            while: { _ in try? await gracefulShutdown() })
    }
}
