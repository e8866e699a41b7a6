import Foundation

/// Where and how to reach the broker, from an `amqp://user:password@host:port/vhost` URL.
package struct AMQPSettings: Sendable {
    package var host: String
    package var port: Int
    package var user: String
    package var password: String
    package var vhost: String
    package var heartbeatSeconds: Int
    /// Names this process in the broker's connection list.
    package var connectionName: String

    package init(url: URL, heartbeatSeconds: Int = 30, connectionName: String) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            components.scheme == "amqp", let host = components.host
        else { throw ConfigurationError(variable: "AMQP URL", reason: "expected amqp://user:password@host:port/vhost") }
        self.host = host
        self.port = components.port ?? 5672
        self.user = components.user?.removingPercentEncoding ?? "guest"
        self.password = components.password?.removingPercentEncoding ?? "guest"
        let path =
            components.percentEncodedPath.hasPrefix("/")
            ? String(components.percentEncodedPath.dropFirst()) : components.percentEncodedPath
        self.vhost = path.isEmpty ? "/" : (path.removingPercentEncoding ?? path)
        self.heartbeatSeconds = heartbeatSeconds
        self.connectionName = connectionName
    }
}
