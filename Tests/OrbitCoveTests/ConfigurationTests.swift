import Foundation
import Logging
import OrbitCoveInfra
import Testing

@Suite struct ConfigurationTests {
    @Test func defaultsMatchTheLocalStack() throws {
        let settings = try ServiceSettings(name: "orbitcove-core", defaultPort: 8082, environment: Environment([:]))
        #expect(settings.httpPort == 8082)
        #expect(settings.httpHost == "127.0.0.1")
        #expect(settings.databaseURL.port == 55432)
        #expect(settings.amqpURL.port == 55672)
        #expect(settings.redisURL.port == 56379)
        #expect(settings.logLevel == .info)
    }

    @Test func aMalformedValueNamesItsVariable() {
        #expect {
            try ServiceSettings(name: "x", defaultPort: 1, environment: Environment(["ORBITCOVE_HTTP_PORT": "eighty"]))
        } throws: { error in
            (error as? ConfigurationError)?.variable == "ORBITCOVE_HTTP_PORT"
        }
        #expect {
            try ServiceSettings(name: "x", defaultPort: 1, environment: Environment(["ORBITCOVE_LOG_LEVEL": "loud"]))
        } throws: { error in
            (error as? ConfigurationError)?.variable == "ORBITCOVE_LOG_LEVEL"
        }
        #expect(throws: ConfigurationError.self) { try Environment(["B": "maybe"]).bool("B", default: false) }
    }

    @Test func brokerAndCacheURLsAreParsed() throws {
        let amqp = try AMQPSettings(
            url: URL(string: "amqp://app:s%40cret@broker:5673/%2F")!, connectionName: "test")
        #expect(amqp.host == "broker")
        #expect(amqp.port == 5673)
        #expect(amqp.password == "s@cret")
        #expect(amqp.vhost == "/")
        let named = try AMQPSettings(url: URL(string: "amqp://u:p@h/orbitcove_test")!, connectionName: "test")
        #expect(named.vhost == "orbitcove_test")
        #expect(named.port == 5672)

        let redis = try RedisSettings(url: URL(string: "redis://:pw@cache:6380/3")!)
        #expect(redis.host == "cache" && redis.port == 6380 && redis.database == 3 && redis.password == "pw")

        let postgres = try Database.configuration(from: URL(string: "postgres://app:pw@db:5433/orbitcove")!)
        #expect(postgres.host == "db" && postgres.port == 5433 && postgres.database == "orbitcove")
        #expect(throws: ConfigurationError.self) { try Database.configuration(from: URL(string: "mysql://x@y/z")!) }
    }
}

@Suite struct JSONLogHandlerTests {
    final class Lines: @unchecked Sendable {
        // Written by the handler and read after logging finished, on the same task.
        var values: [String] = []
    }

    @Test func writesOneParsableJSONObjectPerRecord() throws {
        let lines = Lines()
        var logger = Logger(label: "test") { label in
            JSONLogHandler(label: label, service: "orbitcove-test", level: .debug) { lines.values.append($0) }
        }
        logger[metadataKey: "requestId"] = "abc-123"
        logger.info("line \"one\"\nwith a break", metadata: ["status": .stringConvertible(201)])

        #expect(lines.values.count == 1)
        let line = try #require(lines.values.first)
        #expect(line.hasSuffix("\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["msg"] == "line \"one\"\nwith a break")
        #expect(object["requestId"] == "abc-123")
        #expect(object["service"] == "orbitcove-test")
        #expect(object["level"] == "info")
        #expect(object["status"] == "201")
        #expect(object["ts"]?.hasSuffix("Z") == true)
    }
}
