import Synchronization

/// A boolean shared between tasks and threads: a blocking loop told to stop, a consumer that
/// is consuming, a transaction that wrote a message or marked an idempotency key.
package final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}

    package var isSet: Bool { value.load(ordering: .relaxed) }
    package func set(_ newValue: Bool = true) { value.store(newValue, ordering: .relaxed) }
}
