import Synchronization

/// A count shared between tasks and threads: how often something happened.
package final class AtomicCount: Sendable {
    private let value = Atomic<Int>(0)

    package init() {}

    package var count: Int { value.load(ordering: .relaxed) }
    package func add(_ amount: Int = 1) { value.add(amount, ordering: .relaxed) }
}
