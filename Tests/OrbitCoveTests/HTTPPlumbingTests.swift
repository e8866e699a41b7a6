import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The plumbing every service shares, on a router built the way services build theirs.
@Suite struct HTTPPlumbingTests {
    func app(checks: [ReadinessCheck] = [], settings: [String: String] = [:]) throws -> some ApplicationProtocol {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-test", extra: settings)
        let router = runtime.makeRouter(checks: checks, verifier: nil)
        router.get("/boom") { _, _ -> String in throw PlainError() }
        router.get("/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(2))
            return "done"
        }
        router.post("/echo") { request, context in
            struct Body: Codable, Sendable { var name: String; var count: Int }
            return try Response.data(
                try await request.decodeJSON(as: Body.self, context: context), requestId: context.requestId)
        }
        return runtime.makeApplication(ServiceParts(router: router, services: []))
    }

    struct PlainError: Error {}

    @Test func healthAnswersAndNamesTheService() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.servedBy] == "orbitcove-test")
                #expect(response.headers[.requestId]?.isEmpty == false)
            }
        }
    }

    @Test func unknownRoutesGetTheErrorEnvelope() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/api/v1/nothing-here", method: .get, headers: [.requestId: "req-42"]) {
                response in
                #expect(response.status == .notFound)
                #expect(response.headers[.requestId] == "req-42")
                let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(body.error.code == "NOT_FOUND")
            }
        }
    }

    /// Bytes the HTTP parser refuses get a `400` in the envelope, as the last answer on the
    /// connection, after any answer still owed on it (a hostile probe's: an empty `400`, passed
    /// on by the gateway as it was).
    @Test func bytesThatAreNotARequestGetA400InTheEnvelope() async throws {
        try await app().test(.live) { client in
            let port = try #require(client.port)
            let health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
            for (name, bytes, statuses) in [
                (
                    "a control byte in a header",
                    Array("GET /health HTTP/1.1\r\nHost: x\r\nX-Foo: a\u{1}b\r\n\r\n".utf8), [400]
                ),
                ("raw UTF-8 in the target", Array("GET /h\u{e9}alth HTTP/1.1\r\nHost: x\r\n\r\n".utf8), [400]),
                ("a broken request line", Array("GET\r\n\r\n".utf8), [400]),
                ("a request, then garbage", Array((health + "\u{1}\u{2}\r\n\r\n").utf8), [200, 400]),
                (
                    "two requests, then garbage", Array((health + health + "BAD\u{7f} / HTTP/1.1\r\n\r\n").utf8),
                    [200, 200, 400]
                ),
            ] {
                let (reply, closed) = try await HTTPClientProbe(port: port).exchange(raw: bytes)
                let text = String(decoding: reply, as: UTF8.self)
                let answered = text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap {
                    Int($0.prefix(3))
                }
                #expect(answered == statuses, "\(name): \(text.prefix(600))")
                let last = text.components(separatedBy: "HTTP/1.1 ").last ?? ""
                #expect(last.contains(#""code":"BAD_REQUEST""#), "\(name): \(last.prefix(300))")
                #expect(last.lowercased().contains("content-type: application/json"), "\(name)")
                #expect(closed, "\(name): the connection stayed open")
            }
            // Bad bytes inside a request's body are its reader's error: the request fails and
            // the connection closes, rather than wait for an answer owed to nobody (a review's:
            // a broken chunk held the connection open for good).
            let broken =
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n"
            let (brokenReply, closedAfterBody) = try await HTTPClientProbe(port: port).exchange(raw: Array(broken.utf8))
            #expect(closedAfterBody, "a broken chunk left the connection open")
            // ...answered 400 in the envelope (a hostile probe's: 500), and once: a request
            // answered before its body was read gets no second, empty 400 for the bad bytes.
            let brokenText = String(decoding: brokenReply, as: UTF8.self)
            #expect(
                brokenText.hasPrefix("HTTP/1.1 400") && brokenText.contains(#""code":"BAD_REQUEST""#), "\(brokenText)")
            #expect(brokenText.components(separatedBy: "HTTP/1.1 ").count == 2, "\(brokenText)")
            let early = "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\nQQ\r\n"
            let (earlyReply, closedAfterEarly) = try await HTTPClientProbe(port: port).exchange(raw: Array(early.utf8))
            let earlyText = String(decoding: earlyReply, as: UTF8.self)
            #expect(
                earlyText.components(separatedBy: "HTTP/1.1 ").count == 2 && earlyText.hasPrefix("HTTP/1.1 200"),
                "\(earlyText)")
            #expect(closedAfterEarly)
            // The service is still there.
            let (again, _) = try await HTTPClientProbe(port: port).exchange(
                raw: Array("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            #expect(String(decoding: again, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
    }

    /// A connection that sends nothing, or a request head a byte at a time that never ends (a
    /// slow-headers attack on a service's own port), or that stays idle between requests, is
    /// closed after `ORBITCOVE_HTTP_IDLE_SECONDS`; a request still being answered is not cut
    /// off. (Until now such connections were held open for good.)
    @Test func idleConnectionsAreClosed() async throws {
        try await app(settings: ["ORBITCOVE_HTTP_IDLE_SECONDS": "1"]).test(.live) { client in
            let port = try #require(client.port)
            for (name, bytes) in [
                ("nothing", ""), ("half a head", "GET /health HTTP/1.1\r\nHost: x\r\n"),
                ("half a body", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"),
            ] {
                let (reply, closed) = try await HTTPClientProbe(port: port).exchange(raw: Array(bytes.utf8))
                #expect(closed, "\(name): the connection stayed open")
                #expect(!String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 2"), "\(name)")
            }
            let (kept, closedAfterIdle) = try await HTTPClientProbe(port: port).exchange(
                raw: Array("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(String(decoding: kept, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
            #expect(closedAfterIdle, "a kept-alive connection stayed open while idle")
            let (slow, _) = try await HTTPClientProbe(port: port).exchange(
                raw: Array("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(String(decoding: slow, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "a slow answer was cut off")
        }
    }

    @Test func unexpectedErrorsAreGeneric500s() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/boom", method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(body.error.code == "INTERNAL_ERROR")
                #expect(!String(buffer: response.body).contains("PlainError"))
            }
        }
    }

    @Test func badBodiesNameTheField() async throws {
        try await app().test(.router) { client in
            try await client.execute(
                uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"name":"x"}"#)
            ) {
                response in
                #expect(response.status == .badRequest)
                let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(body.error.code == "VALIDATION_FAILED")
                #expect(body.error.details["fields"] == ["count": "is required"])
            }
            try await client.execute(
                uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{nope")
            ) { response in
                #expect(response.status == .badRequest)
                let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(body.error.details["fields"] == ["body": "is not valid JSON"])
            }
            try await client.execute(
                uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"name":"x","count":2}"#)
            ) {
                response in
                #expect(response.status == .ok)
            }
            // A number no Double holds is named as that, and a leading zero or a raw control
            // character in a string as not JSON (a hostile probe's: "must be an object", or
            // "not valid text (a lone surrogate…)").
            for (text, fields) in [
                (#"{"name":"x","count":1e400}"#, ["count": "is a number too large or too small to hold"]),
                (#"{"name":"x","count":-1e-400}"#, ["count": "is a number too large or too small to hold"]),
                (#"{"name":"x","count":05}"#, ["body": "is not valid JSON"]),
                ("{\"name\":\"x\u{1}\",\"count\":1}", ["body": "is not valid JSON"]),
            ] {
                try await client.execute(
                    uri: "/echo", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: text)
                ) { response in
                    #expect(response.status == .badRequest)
                    let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                    #expect(body.error.details["fields"] == .object(fields.mapValues { .string($0) }), "\(text)")
                }
            }
        }
    }

    /// A field whose text cannot be read (a lone surrogate escape, bytes that are not UTF-8) is
    /// named as that, not as "must be an object" (the last kind a free-form body tried; a
    /// hostile probe's).
    @Test func unreadableTextIsNamedAsSuch() throws {
        for body in [
            Data(#"{"content":"\ud800"}"#.utf8), Data([0x7B, 0x22, 0x63, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]),
        ] {
            #expect {
                _ = try JSONCoding.decoder.decode([String: JSONValue].self, from: body)
            } throws: { error in
                guard case DecodingError.dataCorrupted = error else { return false }
                return true
            }
        }
        #expect(
            try JSONCoding.decoder.decode([String: JSONValue].self, from: Data(#"{"a":"\u00e9"}"#.utf8)) == [
                "a": .string("é")
            ])
    }

    @Test func hostileRequestIdsAreReplaced() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/health", method: .get, headers: [.requestId: "a\"b"]) { response in
                #expect(response.headers[.requestId] != "a\"b")
            }
        }
    }

    @Test func readinessReflectsCriticalAndOptionalDependencies() async throws {
        struct Down: Error {}
        let ok = ReadinessCheck("postgres") {}
        let cacheDown = ReadinessCheck("redis", critical: false) { throw Down() }
        let brokerDown = ReadinessCheck("rabbitmq") { throw Down() }

        try await app(checks: [ok, cacheDown]).test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .ok)
                let report = try JSONCoding.decoder.decode(ReadinessReport.self, from: Data(buffer: response.body))
                #expect(report == ReadinessReport(status: "degraded", checks: ["postgres": "ok", "redis": "failing"]))
            }
        }
        try await app(checks: [ok, brokerDown]).test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
            }
        }
    }

    @Test func metricsAreInPrometheusTextFormat() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            }
        }
    }

    @Test func aServiceWhoseDatabaseIsDownIsNotReady() async throws {
        let port = try freePort()
        let runtime = try TestEnvironment.runtime(
            name: "orbitcove-test",
            extra: ["ORBITCOVE_DATABASE_URL": "postgres://orbitcove_app:x@127.0.0.1:\(port)/orbitcove_test"])
        let database = try Database(
            url: runtime.settings.databaseURL, connectionWait: runtime.settings.databaseWait,
            logger: TestEnvironment.logger)
        let redis = try RedisClient(
            url: runtime.settings.redisURL, timeout: runtime.settings.redisTimeout, logger: TestEnvironment.logger)
        let router = runtime.makeRouter(checks: [.postgres(database), .redis(redis)], verifier: nil)
        let app = runtime.makeApplication(ServiceParts(router: router, services: [database.service(), redis]))
        try await app.test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let report = try JSONCoding.decoder.decode(ReadinessReport.self, from: Data(buffer: response.body))
                #expect(report.checks == ["postgres": "failing", "redis": "ok"])
            }
        }
    }
}
