import Foundation
import Logging

/// The local stack's provider: every push is logged (without its words or the whole token:
/// logs hold no personal data) and counted as accepted, so the whole path runs without
/// Apple's keys.
struct LoggingPushProvider: PushProvider {
    let logger: Logger

    func send(_ message: PushMessage) async -> PushOutcome {
        logger.info(
            "push",
            metadata: [
                "token": .string(String(message.token.prefix(8)) + "…"), "topic": .string(message.topic),
                "environment": .string(message.environment.rawValue),
                "collapseId": .string(message.collapseId ?? "-"), "bytes": "\(message.payload.count)",
            ])
        return .accepted(apnsId: nil)
    }
}
