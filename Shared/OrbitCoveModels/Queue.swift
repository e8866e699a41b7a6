/// The durable queues of the original Service Bus namespace, one per kind of background work.
package enum QueueName: String, Sendable, CaseIterable, Codable {
    case notifications
    case mediaProcessing = "media-processing"
    case reminders

}
