import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra
import OrbitCoveModels

/// The media service. Its queue worker runs from the start; the message types it handles
/// and its public routes arrive with the media features.
package enum MediaApplication {
    package static let defaultPort = 8084

    package static func build(runtime: ServiceRuntime) async throws -> some ApplicationProtocol {
        runtime.makeApplication(try parts(runtime: runtime))
    }

    package static func parts(runtime: ServiceRuntime) throws -> ServiceParts {
        try .queueWorker(runtime: runtime, queue: .mediaProcessing, consumer: "media")
    }
}
