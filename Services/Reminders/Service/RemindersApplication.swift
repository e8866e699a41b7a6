import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// The reminders service. Its queue worker runs from the start; its public routes and the
/// reminders themselves arrive with the reminders feature (issue 25).
package enum RemindersApplication {
    package static let defaultPort = 8085

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(runtime: ServiceRuntime) throws -> ServiceParts {
        try .queueWorker(runtime: runtime, queue: .reminders, consumer: "reminders", register: register)
    }

    /// Every message type core sends to `reminders`, so none is dead-lettered. Dues changes are
    /// acknowledged and not yet acted on: the due-date and overdue reminders they drive are the
    /// reminders feature's (it reads the dues, payments and waivers from the shared database,
    /// so nothing acknowledged before it lands is lost to it).
    static func register(_ handlers: inout MessageHandlers) {
        handlers.on(DuesChanged.self) { envelope, _, logger in
            logger.debug(
                "dues change noted", metadata: ["dues": "\(envelope.data.duesId)", "change": "\(envelope.data.change)"])
        }
    }
}
