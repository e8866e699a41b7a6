import Synchronization

/// A boolean shared between tasks and threads: a blocking loop told to stop, a consumer that
/// is consuming, a transaction that wrote a message or marked an idempotency key.
package final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}

    package var isSet: Bool { value.load(ordering: .relaxed) }
    package func set(_ newValue: Bool = true) { value.store(newValue, ordering: .relaxed) }
}

/// A count shared between tasks and threads: how often something happened.
package final class AtomicCount: Sendable {
    private let value = Atomic<Int>(0)

    package init() {}

    package var count: Int { value.load(ordering: .relaxed) }
    package func add(_ amount: Int = 1) { value.add(amount, ordering: .relaxed) }
}
