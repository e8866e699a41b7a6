import Foundation
import HTTPTypes
import Logging
import NIOCore
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization
import Testing
import WSClient

/// A client of the realtime stream over a real WebSocket: what it received, in order, and a
/// way to send frames, as an app holds one.
final class StreamProbe: Sendable {
    private final class Received: Sendable {
        let frames = Mutex<[StreamFrame]>([])
        /// How the connection ended, once it has.
        let end = Mutex("open")
    }

    private let received = Received()
    private let outgoing: AsyncStream<WebSocketOutboundWriter.OutboundFrame>.Continuation
    /// The close frame the server sent, once the connection ended (nil: none); see ``end(within:)``.
    private let ended: Task<WebSocketCloseFrame?, any Error>

    private init(url: String, headers: HTTPFields) {
        let (outgoingFrames, outgoing) = AsyncStream.makeStream(of: WebSocketOutboundWriter.OutboundFrame.self)
        self.outgoing = outgoing
        let received = self.received
        ended = Task { [received] in
            do {
                let closed = try await Self.connect(
                    url: url, headers: headers, received: received, outgoingFrames: outgoingFrames)
                let code = closed.map { "\(UInt16(webSocketErrorCode: $0.closeCode)) \($0.reason ?? "")" }
                received.end.withLock { $0 = "closed: \(code ?? "no close frame")" }
                return closed
            } catch {
                received.end.withLock { $0 = "failed: \(error)" }
                throw error
            }
        }
    }

    private static func connect(
        url: String, headers: HTTPFields, received: Received,
        outgoingFrames: AsyncStream<WebSocketOutboundWriter.OutboundFrame>
    ) async throws -> WebSocketCloseFrame? {
        try await WebSocketClient.connect(
            url: url, configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers),
            logger: TestEnvironment.logger
        ) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        let frame = try JSONCoding.decoder.decode(StreamFrame.self, from: Data(text.utf8))
                        received.frames.withLock { $0.append(frame) }
                    }
                }
                group.addTask {
                    for await frame in outgoingFrames { try await outbound.write(frame) }
                    try await outbound.close(.normalClosure, reason: nil)
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// Opens the stream on the notifications service at `port`, as `person` (a bearer token)
    /// or with `ticket`.
    static func open(port: Int, as person: CoreHarness.Person? = nil, ticket: String? = nil) -> StreamProbe {
        var headers: HTTPFields = [:]
        if let person { headers[.authorization] = "Bearer \(person.token)" }
        let query = ticket.map { "?ticket=\($0)" } ?? ""
        return StreamProbe(url: "ws://127.0.0.1:\(port)/api/v1/me/stream\(query)", headers: headers)
    }

    var frames: [StreamFrame] { received.frames.withLock { $0 } }

    func send(_ frame: StreamClientFrame) throws {
        outgoing.yield(.text(String(decoding: try JSONEncoder().encode(frame), as: UTF8.self)))
    }

    func send(raw frame: WebSocketOutboundWriter.OutboundFrame) { outgoing.yield(frame) }

    func subscribe(_ community: UUID, from token: String?) throws {
        try send(
            StreamClientFrame(
                type: .subscribe, communities: [StreamSubscription(communityId: community, syncToken: token)]))
    }

    /// Closes from the client's side and waits (up to `seconds`) for the end; a stream that does
    /// not end is recorded as the test's failure and its connection abandoned, so the test ends
    /// rather than waiting for it for ever.
    func close(within seconds: Double = 20) async {
        outgoing.finish()
        do {
            _ = try await end(within: seconds)
        } catch let failure as TestFailure {
            ended.cancel()
            Issue.record(failure)
        } catch {
            // It ended with an error: ended all the same.
        }
    }

    /// The close frame the server sent (nil: none), waiting up to `seconds` for the connection
    /// to end: a test of a stream that should end fails, rather than hangs, when it does not.
    func end(within seconds: Double = 15) async throws -> WebSocketCloseFrame? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while received.end.withLock({ $0 }) == "open" && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard received.end.withLock({ $0 }) != "open" else {
            throw TestFailure(
                "stream: still open after \(seconds) s; received \(frames.count) frames: \(frames.suffix(8).map(\.summary))"
            )
        }
        return try await ended.value
    }

    /// Waits (up to `seconds`) until the frames received satisfy `condition`.
    @discardableResult
    func wait(
        seconds: Double = 15, for what: String, until condition: ([StreamFrame]) -> Bool
    ) async throws -> [StreamFrame] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let frames = self.frames
            if condition(frames) { return frames }
            try await Task.sleep(for: .milliseconds(20))
        }
        let state = received.end.withLock { $0 }
        throw TestFailure(
            "stream: no \(what) within \(seconds) s (\(state)); received \(frames.count) frames: \(frames.suffix(8).map(\.summary))"
        )
    }

    /// The change frames received for `entity`.
    func changes(of entity: UUID) -> [StreamFrame] { frames.filter { $0.type == .change && $0.id == entity } }
}

extension StreamFrame {
    var summary: String {
        [type.rawValue, kind, operation, id.map { String($0.uuidString.prefix(8)) }, code].compactMap { $0 }
            .joined(separator: " ")
    }
}
