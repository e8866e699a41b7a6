import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

/// Publishes persistent messages with publisher confirms over one connection that lives on its
/// own thread. A batch is published as a window and then its confirms are awaited together.
/// A broken connection is dropped and re-opened (and the topology re-declared) on next use.
///
/// The thread starts when the service group runs the publisher and stops when it shuts down,
/// after closing the connection: a call made before the start waits for it, one made after the
/// stop fails with ``ServiceNotRunning``.
///
/// rabbitmq-c only answers heartbeats when it is called, so while the publisher runs it
/// services its idle connection every half heartbeat interval; otherwise a publisher that sat
/// idle (a queue worker's, between failures) would find its connection dropped by the broker.
/// And a publish that finds its connection dead is tried once more on a fresh one.
package final class AMQPPublisher: Service, Sendable {
    private let settings: AMQPSettings
    private let topology: QueueTopology
    private let logger: Logger
    private let thread = ServiceResource<NIOThreadPool>("AMQP publisher")
    private let state = PublisherState()
    private let confirmTimeout: Duration

    package init(
        settings: AMQPSettings, topology: QueueTopology, logger: Logger, confirmTimeout: Duration = .seconds(10)
    ) {
        self.settings = settings
        self.topology = topology
        self.logger = logger
        self.confirmTimeout = confirmTimeout
    }

    /// Publishes `messages` and returns the ids the broker confirmed. Ids it refused (nack,
    /// unroutable) or that were still unconfirmed when the connection failed are not returned:
    /// the caller keeps them for a later attempt.
    package func publish(_ messages: [OutgoingMessage]) async throws -> Set<UUID> {
        guard !messages.isEmpty else { return [] }
        let (settings, topology, state, timeout) = (self.settings, self.topology, self.state, self.confirmTimeout)
        return try await thread.run {
            var attempt = 1
            while true {
                let reused = state.current != nil
                let connection = try state.connection(settings: settings, topology: topology)
                do {
                    return try Self.publishAndConfirm(messages, on: connection, state: state, timeout: timeout)
                } catch {
                    state.drop()
                    // Only a connection that had sat idle earns a second try: a fresh one that
                    // fails says the broker is in trouble, and the caller's back-off applies.
                    guard reused, attempt == 1, !error.isConfirmTimeout else { throw error }
                    attempt += 1
                }
            }
        }
    }

    /// Services heartbeats on an idle connection; the relay calls this between batches.
    package func keepAlive() async {
        let state = self.state
        _ = try? await thread.run {
            guard let connection = state.current else { return }
            do {
                while true {
                    if case .timeout = try connection.nextConfirmFrame(timeout: .zero) { return }
                }
            } catch {
                state.drop()
            }
        }
    }

    /// Whether a connection can be opened now (for `/ready`). A publisher still starting is
    /// waited for (a loaded machine may take seconds to start a thread), but not forever: one
    /// that is never run answers after 30 seconds instead of holding the probe.
    package func check() async throws {
        let (settings, topology, state) = (self.settings, self.topology, self.state)
        try await thread.run(deadline: .now + .seconds(30)) {
            _ = try state.connection(settings: settings, topology: topology)
        }
    }

    package func run() async throws {
        let interval = Duration.seconds(max(1, settings.heartbeatSeconds)) / 2
        let state = self.state
        try await thread.serveThreads(1) {
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    await self.keepAlive()
                }
            }
            _ = try? await thread.run { state.close() }
        }
    }

    private static func publishAndConfirm(
        _ messages: [OutgoingMessage], on connection: AMQPConnection, state: PublisherState, timeout: Duration
    ) throws -> Set<UUID> {
        var pending: [UInt64: UUID] = [:]
        for message in messages {
            try connection.publish(message)
            pending[state.takeTag()] = message.id
        }
        var confirmed = Set<UUID>()
        var returned = Set<String>()
        let deadline = ContinuousClock.now + timeout
        while !pending.isEmpty {
            guard ContinuousClock.now < deadline else { throw AMQPError.confirmTimeout(outstanding: pending.count) }
            switch try connection.nextConfirmFrame(timeout: .milliseconds(200)) {
            case .ack(let tag, let multiple):
                for key in settled(pending, tag: tag, multiple: multiple) {
                    if let id = pending.removeValue(forKey: key), !returned.contains(id.lowercasedString) {
                        confirmed.insert(id)
                    }
                }
            case .nack(let tag, let multiple):
                for key in settled(pending, tag: tag, multiple: multiple) { pending.removeValue(forKey: key) }
            case .returned(let messageId):
                if let messageId { returned.insert(messageId) }
            case .timeout:
                continue
            }
        }
        return confirmed
    }

    private static func settled(_ pending: [UInt64: UUID], tag: UInt64, multiple: Bool) -> [UInt64] {
        multiple ? pending.keys.filter { $0 <= tag } : [tag]
    }
}

/// The publisher's connection and its confirm counter.
/// `@unchecked Sendable`: only ever touched from the publisher's single dedicated thread
/// (every access is inside `thread.run`), so there is no concurrent access to guard.
private final class PublisherState: @unchecked Sendable {
    private(set) var current: AMQPConnection?
    private var nextTag: UInt64 = 1

    func connection(settings: AMQPSettings, topology: QueueTopology) throws -> AMQPConnection {
        if let current { return current }
        let connection = try AMQPConnection(settings: settings)
        try connection.declare(topology)
        try connection.enableConfirms()
        current = connection
        nextTag = 1
        return connection
    }

    /// Delivery tags in confirm mode count publishes on the channel, starting at 1.
    func takeTag() -> UInt64 {
        defer { nextTag += 1 }
        return nextTag
    }

    func drop() {
        current?.abandon()
        current = nil
    }

    func close() { current = nil }
}

extension Error {
    fileprivate var isConfirmTimeout: Bool {
        if case .confirmTimeout = self as? AMQPError { return true }
        return false
    }
}
