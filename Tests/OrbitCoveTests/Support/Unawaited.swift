import Synchronization

/// What `work`, run in a task of its own, ended with, once it has: a test reads it without
/// awaiting the task, so a task that never ends fails the test instead of hanging it.
final class Unawaited<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)

    private init() {}

    static func start(_ work: @escaping @Sendable () async throws -> Value) -> Unawaited {
        let unawaited = Unawaited()
        Task {
            do {
                let value = try await work()
                unawaited.result.withLock { $0 = .success(value) }
            } catch {
                unawaited.result.withLock { $0 = .failure(error) }
            }
        }
        return unawaited
    }

    var value: Result<Value, any Error>? { result.withLock { $0 } }
}
