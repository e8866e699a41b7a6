import Foundation
import OrbitCoveModels

/// The topology as a RabbitMQ definitions document (`rabbitmqctl import_definitions`, or
/// `load_definitions` at boot), generated from the same `QueueTopology` the services declare,
/// so the file under `deploy/` cannot drift from the code: a test compares the two.
/// Users and permissions are left out on purpose: they carry secrets, which operators supply.
package enum BrokerDefinitions {
    package static func json(
        vhost: String = "orbitcove", topology: QueueTopology = .forQueues(QueueName.allCases)
    )
        throws -> String
    {
        var document: [String: JSONValue] = [:]
        document["vhosts"] = .array([.object(["name": .string(vhost)])])
        document["exchanges"] = .array(
            topology.exchanges.map { exchange in
                .object([
                    "name": .string(exchange.name), "vhost": .string(vhost), "type": .string(exchange.type),
                    "durable": .bool(true), "auto_delete": .bool(false), "internal": .bool(false),
                    "arguments": .object([:]),
                ])
            })
        document["queues"] = .array(
            topology.queues.map { queue in
                .object([
                    "name": .string(queue.name), "vhost": .string(vhost), "durable": .bool(true),
                    "auto_delete": .bool(false),
                    "arguments": .object(Dictionary(uniqueKeysWithValues: queue.arguments.map { ($0.0, json($0.1)) })),
                ])
            })
        document["bindings"] = .array(
            topology.queues.flatMap { queue in
                queue.bindings.map { exchange, routingKey in
                    .object([
                        "source": .string(exchange), "vhost": .string(vhost), "destination": .string(queue.name),
                        "destination_type": .string("queue"), "routing_key": .string(routingKey),
                        "arguments": .object([:]),
                    ])
                }
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(document), as: UTF8.self) + "\n"
    }

    private static func json(_ value: AMQPFieldValue) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .int(let number): .number(Double(number))
        case .bool(let flag): .bool(flag)
        }
    }
}
