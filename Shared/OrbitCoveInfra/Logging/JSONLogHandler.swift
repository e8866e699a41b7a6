import Foundation
import Logging

/// Writes one JSON object per log record to standard output: `ts`, `level`, `service`,
/// `logger`, `msg`, then the record's metadata (request id, message id, ...) as fields.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level
    private let label: String
    private let service: String
    private let output: @Sendable (String) -> Void

    package init(
        label: String, service: String, level: Logger.Level,
        output: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data($0.utf8)) }
    ) {
        self.label = label
        self.service = service
        self.logLevel = level
        self.output = output
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        var line = "{\"ts\":\(Self.quoted(Self.timestamp()))"
        line += ",\"level\":\(Self.quoted(event.level.rawValue))"
        line += ",\"service\":\(Self.quoted(service))"
        line += ",\"logger\":\(Self.quoted(label))"
        line += ",\"msg\":\(Self.quoted(event.message.description))"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line += ",\(Self.quoted(key)):\(Self.quoted(value.description))"
        }
        line += "}\n"
        output(line)
    }

    /// Installs the handler for the whole process; call once at start-up.
    package static func bootstrap(service: String, level: Logger.Level) {
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label, service: service, level: level) }
    }

    private static func timestamp() -> String {
        Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
