import Foundation
import OrbitCoveModels

/// One push to one device, ready for the wire.
struct PushMessage: Sendable, Equatable {
    var token: String
    var environment: PushEnvironment
    /// The app's bundle id (`apns-topic`).
    var topic: String
    /// The JSON body (`aps` and our deep link), at most 4 KB.
    var payload: [UInt8]
    var collapseId: String?
    var priority = 10
    var pushType = "alert"
    /// How long APNs keeps trying an offline device.
    var expiration: Date?
}

/// What became of a push.
package enum PushOutcome: Sendable, Equatable {
    case accepted(apnsId: String?)
    /// Refused for good: a push that can never go. `dropToken` when the token itself is dead
    /// (unregistered since `invalidSince`, or not a token at all).
    case refused(status: Int, reason: String, dropToken: Bool, invalidSince: Date?)
    /// Refused for now (throttled, APNs unwell, the connection lost): try again later.
    case retry(status: Int?, reason: String)

    var isFinal: Bool {
        if case .retry = self { return false }
        return true
    }
}

/// Sends pushes: ``APNsProvider`` to Apple, ``LoggingPushProvider`` locally. Never blocks a
/// thread: a send is an async request on the provider's own connections.
protocol PushProvider: Sendable {
    func send(_ message: PushMessage) async -> PushOutcome
}
