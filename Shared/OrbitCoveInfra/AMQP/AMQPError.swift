/// Why an AMQP operation failed. Any of these ends the connection: the owner reconnects.
package enum AMQPError: Error, CustomStringConvertible {
    case connect(String)
    case library(String, during: String)
    case serverClosed(code: Int, text: String, during: String)
    case confirmTimeout(outstanding: Int)
    case unexpected(String)

    package var description: String {
        switch self {
        case .connect(let reason): "cannot connect to the broker: \(reason)"
        case .library(let reason, let during): "\(during): \(reason)"
        case .serverClosed(let code, let text, let during): "\(during): broker closed with \(code) \(text)"
        case .confirmTimeout(let outstanding): "\(outstanding) publisher confirms did not arrive in time"
        case .unexpected(let reason): reason
        }
    }
}
