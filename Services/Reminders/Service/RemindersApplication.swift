import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// The reminders service. Its queue worker runs from the start; the message types it handles
/// and its public routes arrive with the reminders features.
package enum RemindersApplication {
    package static let defaultPort = 8085

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(runtime: ServiceRuntime) throws -> ServiceParts {
        try .queueWorker(runtime: runtime, queue: .reminders, consumer: "reminders")
    }
}
