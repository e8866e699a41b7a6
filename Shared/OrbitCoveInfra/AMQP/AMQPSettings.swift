import Foundation

/// Where and how to reach the broker, from an `amqp://user:password@host:port/vhost` URL, or
/// `amqps://...` for TLS (port 5671 by default). With TLS the broker's certificate is always
/// checked, chain and host name, against `?cacertfile=/path/ca.pem` or the system's trust
/// store; `?verify=verify_none` turns the check off, as RabbitMQ's URI spec names it.
package struct AMQPSettings: Sendable {
    package struct TLS: Sendable, Equatable {
        package var caFile: String?
        package var verifyPeer = true
    }

    package var host: String
    package var port: Int
    package var user: String
    package var password: String
    package var vhost: String
    package var heartbeatSeconds: Int
    /// Names this process in the broker's connection list.
    package var connectionName: String
    package var tls: TLS?

    package init(url: URL, heartbeatSeconds: Int = 30, connectionName: String) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme, ["amqp", "amqps"].contains(scheme), let host = components.host
        else {
            throw ConfigurationError(variable: "AMQP URL", reason: "expected amqp[s]://user:password@host:port/vhost")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        if scheme == "amqps" {
            var tls = TLS(caFile: query["cacertfile"])
            switch query["verify"] {
            case nil, "verify_peer": tls.verifyPeer = true
            case "verify_none": tls.verifyPeer = false
            default: throw ConfigurationError(variable: "AMQP URL", reason: "verify must be verify_peer or verify_none")
            }
            self.tls = tls
        } else {
            self.tls = nil
        }
        self.host = host
        self.port = components.port ?? (scheme == "amqps" ? 5671 : 5672)
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
