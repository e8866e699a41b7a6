import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization

/// One open stream as the hub sees it: its user, and the queue of what waits for it (the
/// client's own frames and the hub's batches), bounded. When the queue is full the stream is
/// too slow (or the client floods it): ``overflowed`` fires and the socket is closed.
final class StreamConnection: Sendable {
    enum Event: Sendable {
        case client(StreamClientFrame)
        /// A batch; `afterGap` when this instance missed the shard's publication before it
        /// (or the feed's reader changed), so a change nobody was sent may lie before it.
        case batch(StreamBatch, afterGap: Bool)
    }

    let id = UUID()
    let userId: UUID
    let events: AsyncStream<Event>
    /// Yields once, when an event found the queue full.
    let overflowed: AsyncStream<Void>
    private let queue: AsyncStream<Event>.Continuation
    private let overflow: AsyncStream<Void>.Continuation
    private let hasOverflowed = Atomic(false)

    init(userId: UUID, bound: Int) {
        self.userId = userId
        (events, queue) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(bound))
        (overflowed, overflow) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues an event without waiting.
    func offer(_ event: Event) {
        if case .dropped = queue.yield(event), !hasOverflowed.exchange(true, ordering: .relaxed) {
            overflow.yield()
            overflow.finish()
        }
    }

    func finish() {
        queue.finish()
        overflow.finish()
    }
}
