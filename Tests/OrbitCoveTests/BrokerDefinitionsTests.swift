import Foundation
import OrbitCoveInfra
import Testing

/// `deploy/rabbitmq/definitions.json` is what an operator loads into RabbitMQ; the services
/// declare the same topology on connect, and any argument that differs makes the broker refuse
/// them (PRECONDITION_FAILED). So the file must be exactly what the code generates.
@Suite struct BrokerDefinitionsTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/rabbitmq/definitions.json")

    @Test func theShippedDefinitionsAreWhatTheServicesDeclare() throws {
        let shipped = try String(contentsOf: Self.file, encoding: .utf8)
        #expect(
            shipped == (try BrokerDefinitions.json()),
            "regenerate with: .build/debug/orbitcove-admin definitions > deploy/rabbitmq/definitions.json")
    }

    @Test func everyQueueHasItsDeadLetterAndHoldQueues() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: Self.file)) as? [String: Any])
        let queues = (document["queues"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        for queue in ["notifications", "media-processing", "reminders"] {
            #expect(queues.contains(queue))
            #expect(queues.contains("\(queue).dead-letter"))
            #expect(queues.contains("\(queue).retry.5s") && queues.contains("\(queue).retry.30s"))
            #expect(queues.contains("\(queue).retry.5m"))
        }
    }
}
