import Foundation
import Logging
import OrbitCoveModels
import Synchronization

/// Decides the answer to each push request and remembers what it saw: the scripts, the requests
/// and the provider tokens. Called from every connection's event loop, so its state is behind a lock
/// that is never held across a signature check.
final class PushResponder: Sendable {
    struct Answer: Sendable {
        var status: Int
        var reason: String?
        /// For 410: when the token was last known to be valid.
        var timestamp: Date
        var apnsId: String
        var delay: Duration

        /// APNs' error body, `{"reason": …}` plus `"timestamp"` (milliseconds) for 410; none on success.
        var body: [UInt8]? {
            guard status != 200 else { return nil }
            let millis = status == 410 ? Int64((timestamp.timeIntervalSince1970 * 1000).rounded()) : nil
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return (try? encoder.encode(ErrorBody(reason: reason ?? "", timestamp: millis))).map(Array.init)
        }

        private struct ErrorBody: Encodable {
            let reason: String
            let timestamp: Int64?
        }
    }

    private struct State {
        var scripts: [String: [APNsStandIn.Reply]] = [:]
        var received: [APNsStandIn.Received] = []
        var providerTokens: [String: ProviderTokenCheck.Verdict] = [:]
    }

    private let state = Mutex(State())
    private let tokenCheck: ProviderTokenCheck
    private let now: @Sendable () -> Date
    private let keepsRecords: Bool
    private let logger: Logger
    private let onAnswer: (@Sendable (APNsStandIn.Received) -> Void)?

    init(
        tokenCheck: ProviderTokenCheck, now: @escaping @Sendable () -> Date, keepsRecords: Bool, logger: Logger,
        onAnswer: (@Sendable (APNsStandIn.Received) -> Void)?
    ) {
        self.tokenCheck = tokenCheck
        self.now = now
        self.keepsRecords = keepsRecords
        self.logger = logger
        self.onAnswer = onAnswer
    }

    func script(_ token: String, _ replies: [APNsStandIn.Reply]) {
        state.withLock { $0.scripts[token.lowercased(), default: []].append(contentsOf: replies) }
    }

    func received() -> [APNsStandIn.Received] { state.withLock { $0.received } }

    func providerTokensSeen() -> Set<String> { state.withLock { Set($0.providerTokens.keys) } }

    func answer(_ request: PushRequest) -> Answer {
        let at = now()
        let requestedId = request.header("apns-id").flatMap { PushRequestCheck.isCanonicalUUID($0) ? $0 : nil }
        var payload: [String: JSONValue]?
        var reply = APNsStandIn.Reply.ok
        do throws(Rejection) {
            payload = try check(request, now: at)
            reply = nextReply(for: request.deviceToken ?? "")
        } catch {
            reply = .status(error.status, error.reason)
        }
        let answer = Answer(
            status: reply.status, reason: reply.reason, timestamp: reply.timestamp ?? at,
            apnsId: requestedId ?? UUID().uuidString, delay: reply.delay)
        logger.debug(
            "answered push",
            metadata: [
                "token": "\(request.deviceToken ?? request.path)", "status": "\(answer.status)",
                "reason": "\(answer.reason ?? "")",
            ])
        record(request, answer, payload: payload, at: at)
        return answer
    }

    /// Apple documents no order; ours is the request line, then who is sending, then what is sent.
    private func check(_ request: PushRequest, now: Date) throws(Rejection) -> [String: JSONValue] {
        try PushRequestCheck.checkRequestLine(request)
        let token = try ProviderTokenCheck.bearerToken(in: request.header("authorization"))
        try ProviderTokenCheck.check(verdict(for: token), now: now)
        return try PushRequestCheck.checkNotification(request)
    }

    private func verdict(for token: String) -> ProviderTokenCheck.Verdict {
        if let known = state.withLock({ $0.providerTokens[token] }) { return known }
        let verdict = tokenCheck.verdict(for: token)
        state.withLock { $0.providerTokens[token] = verdict }
        return verdict
    }

    private func nextReply(for token: String) -> APNsStandIn.Reply {
        state.withLock { state in
            guard var replies = state.scripts[token.lowercased()], !replies.isEmpty else { return .ok }
            let reply = replies.removeFirst()
            state.scripts[token.lowercased()] = replies.isEmpty ? nil : replies
            return reply
        }
    }

    private func record(_ request: PushRequest, _ answer: Answer, payload: [String: JSONValue]?, at: Date) {
        guard keepsRecords || onAnswer != nil else { return }
        let received = APNsStandIn.Received(
            token: request.deviceToken ?? "", headers: request.headerFields, body: request.body,
            json: payload ?? JSONValue(parsing: request.body)?.objectValue, at: at, status: answer.status,
            reason: answer.reason, apnsId: answer.apnsId)
        if keepsRecords { state.withLock { $0.received.append(received) } }
        onAnswer?(received)
    }
}
