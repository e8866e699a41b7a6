import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

extension Client {
    /// The client an app uses: every operation of `deploy/openapi/openapi.yaml`, signed in as
    /// `session` (tokens added, refreshed on a `401`).
    ///
    /// - Parameters:
    ///   - serverURL: the gateway, e.g. `http://127.0.0.1:8080` (the paths carry `/api/v1`).
    ///   - transport: how requests travel; AsyncHTTPClient's shared client by default (on
    ///     Apple platforms an app may pass swift-openapi-urlsession's `URLSessionTransport()`).
    public static func orbitCove(
        serverURL: URL, session: Session, transport: any ClientTransport = AsyncHTTPClientTransport()
    ) -> Client {
        let configuration = Configuration(dateTranscoder: OrbitCoveDates())
        let plain = Client(serverURL: serverURL, configuration: configuration, transport: transport)
        return Client(
            serverURL: serverURL, configuration: configuration, transport: transport,
            middlewares: [BearerAuthenticationMiddleware(session: session, refreshClient: plain)])
    }
}

/// The API writes every date-time in UTC with milliseconds (`2026-01-04T12:00:00.000Z`) and
/// reads RFC 3339 with or without them; this reads both and writes milliseconds.
public struct OrbitCoveDates: DateTranscoder {
    public init() {}

    public func encode(_ date: Date) throws -> String {
        try ISO8601DateTranscoder.iso8601WithFractionalSeconds.encode(date)
    }

    public func decode(_ text: String) throws -> Date {
        if let date = try? ISO8601DateTranscoder.iso8601WithFractionalSeconds.decode(text) { return date }
        return try ISO8601DateTranscoder.iso8601.decode(text)
    }
}
