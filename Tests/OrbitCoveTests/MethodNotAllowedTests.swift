import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrbitCoveInfra
import OrbitCoveModels
import Synchronization
import Testing

/// A path the service has, asked with a method it does not take, is `405` with `Allow`; a
/// path it does not have is `404`. On a router built the way services build theirs, and on
/// core's own router.
@Suite struct MethodNotAllowedTests {
    func app() throws -> some ApplicationProtocol {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-test")
        let router = runtime.makeRouter(checks: [], verifier: nil)
        router.get("/things") { _, _ in "list" }
        router.post("/things") { _, _ in "made" }
        router.get("/things/:id") { _, _ in "one" }
        router.delete("/things/:id") { _, _ in HTTPResponse.Status.noContent }
        router.get("/things/special") { _, _ in "special" }
        router.get("/stream") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/csv"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "a,b\n"))
                    try await writer.finish(nil)
                })
        }
        let group = router.group("/groups/:groupId")
        group.patch("settings") { _, _ in "changed" }
        return runtime.makeApplication(ServiceParts(router: router, services: []))
    }

    @Test func aKnownPathWithAnotherMethodIs405WithAllow() async throws {
        try await app().test(.router) { client in
            try await client.execute(uri: "/things?limit=3", method: .patch, headers: [.requestId: "req-405"]) {
                response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD, POST")
                #expect(response.headers[.requestId] == "req-405")
                let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(body.error.code == "METHOD_NOT_ALLOWED")
            }
            try await client.execute(uri: "/things/42", method: .put) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "DELETE, GET, HEAD")
            }
            // The router resolves `special` as its own path before `:id`, and so does the 405.
            try await client.execute(uri: "/things/special", method: .delete) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD")
            }
            try await client.execute(uri: "/groups/7/settings", method: .get) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "PATCH")
            }
            // The operational endpoints are paths like any other.
            try await client.execute(uri: "/health", method: .post) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD")
            }
            // Declared methods still answer as before.
            try await client.execute(uri: "/things/42", method: .delete) { response in
                #expect(response.status == .noContent)
            }
        }
    }

    /// `HEAD` is answered wherever `GET` is: the `GET`'s status and headers, no body (found by a
    /// probe: every `HEAD` was 405, calendar feeds and signed media addresses included, and
    /// `Allow` left it out).
    @Test func headIsAnsweredWhereverGetIs() async throws {
        try await app().test(.router) { client in
            for path in ["/things", "/things/42", "/things/special", "/health"] {
                try await client.execute(uri: path, method: .head) { response in
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.body.readableBytes == 0, "\(path)")
                }
            }
            try await client.execute(uri: "/groups/7/settings", method: .head) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "PATCH")
            }
            // The GET's length where it has one; where its body streams (the ledger's CSV
            // export), no length at all rather than a false `Content-Length: 0`.
            let length = try await client.execute(uri: "/things", method: .get).headers[.contentLength]
            try await client.execute(uri: "/things", method: .head) { response in
                #expect(response.headers[.contentLength] == length && length == "4")
            }
            try await client.execute(uri: "/stream", method: .head) { response in
                #expect(response.status == .ok && response.body.readableBytes == 0)
                #expect(response.headers[.contentLength] == nil, "\(response.headers)")
                #expect(response.headers[.contentType] == "text/csv")
            }
        }
    }

    /// Counts the bodies written to their end, as request metrics do (they hold a request
    /// active until its body is written).
    struct BodiesEnded: RouterMiddleware {
        typealias Context = AppRequestContext
        let ended: Counter

        final class Counter: Sendable {
            private let value = Mutex(0)
            func add() { value.withLock { $0 += 1 } }
            var count: Int { value.withLock { $0 } }
        }

        func handle(
            _ request: Request, context: Context, next: (Request, Context) async throws -> Response
        ) async throws -> Response {
            var response = try await next(request, context)
            let (body, ended) = (response.body, ended)
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                try await body.write(writer)
                ended.add()
            }
            return response
        }
    }

    /// A `HEAD` runs its `GET`'s body to the end without sending it, so what waits for the end
    /// (the request metrics' active requests, found by a review: they grew by one per `HEAD`)
    /// sees it, for a body of known length and for a streamed one.
    @Test func aHeadEndsItsGetsBodyUnsent() async throws {
        let runtime = try TestEnvironment.runtime(name: "orbitcove-test")
        let router = runtime.makeRouter(checks: [], verifier: nil)
        let ended = BodiesEnded.Counter()
        router.add(middleware: BodiesEnded(ended: ended))
        router.get("/fixed") { _, _ in "fixed" }
        router.get("/stream") { _, _ in
            Response(
                status: .ok,
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "a,b\n"))
                    try await writer.finish(nil)
                })
        }
        try await runtime.makeApplication(ServiceParts(router: router, services: [])).test(.router) { client in
            for path in ["/fixed", "/stream"] {
                let before = ended.count
                try await client.execute(uri: path, method: .head) { response in
                    #expect(response.status == .ok && response.body.readableBytes == 0, "\(path)")
                }
                #expect(ended.count == before + 1, "\(path)")
            }
        }
    }

    @Test func anUnknownPathIsStill404() async throws {
        try await app().test(.router) { client in
            for (path, method) in [
                ("/nothing-here", HTTPRequest.Method.get), ("/things/42/more", .get), ("/groups/7", .patch),
                ("/nothing-here", .delete),
            ] {
                try await client.execute(uri: path, method: method) { response in
                    #expect(response.status == .notFound, "\(method) \(path)")
                    #expect(response.headers[.allow] == nil)
                    let body = try JSONCoding.decoder.decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                    #expect(body.error.code == "NOT_FOUND")
                }
            }
        }
    }

    /// Core's community routes sit on a gated group of their own context; the 405 is answered
    /// before any gate, and says nothing about the community (the paths are public).
    @Test func coreAnswers405OnItsOwnRoutes() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            let community = try await api.community(by: ada)
            let members = try await api.call(.post, "/api/v1/communities/\(community.id)/members", as: ada)
            #expect(members.status == .methodNotAllowed && members.errorCode == "METHOD_NOT_ALLOWED")
            #expect(members.headers[.allow] == "GET, HEAD")
            let unknown = try await api.call(.put, "/api/v1/communities/\(UUID())", as: ada)
            #expect(unknown.status == .methodNotAllowed)
            #expect(unknown.headers[.allow] == "DELETE, GET, HEAD, PATCH")
            let mine = try await api.call(.delete, "/api/v1/me/communities", as: ada)
            #expect(mine.status == .methodNotAllowed && mine.headers[.allow] == "GET, HEAD")
            let head = try await api.call(.head, "/api/v1/communities/\(community.id)", as: ada)
            #expect(
                head.status == .ok && head.body.isEmpty
                    && head.headers[.contentType]?.hasPrefix("application/json") == true)
            let nowhere = try await api.call(.get, "/api/v1/communities/\(community.id)/nothing", as: ada)
            #expect(nowhere.status == .notFound && nowhere.errorCode == "NOT_FOUND")
        }
    }
}
