import ArgumentParser
import Foundation
import Hummingbird
import Logging
import OrbitCoveInfra

/// A server that answers GETs of fixed paths with fixed bodies (read from files at start) and
/// does nothing else: what a Swift service on Hummingbird costs before it does any work.
/// `--plumbing bare` is Hummingbird's own router and HTTP/1.1 server; `--plumbing service` is
/// the services' (`ServiceRuntime`: request ids, metrics, the error envelope, idle timeouts,
/// `405`s, HEAD) with no token check, rate limit or cache. `scripts/bench/core-read.sh` runs
/// both behind an nginx shaped like the gateway, beside core's cached reads, so the distance
/// from nginx serving the bytes splits into the framework's, the plumbing's and core's own.
///
///     orbitcove-http-floor --port 8096 --plumbing bare --answer /a=a.json --answer /b=b.json
@main
struct HTTPFloor: AsyncParsableCommand {
    enum Plumbing: String, ExpressibleByArgument { case bare, service }

    @Option var port: Int
    @Option var plumbing: Plumbing = .bare
    @Option(name: .customLong("answer"), help: "PATH=FILE: GET PATH answers FILE's bytes as JSON")
    var answers: [String]

    func run() async throws {
        var bodies: [(path: String, body: ByteBuffer)] = []
        for answer in answers {
            guard let equals = answer.firstIndex(of: "=") else {
                throw ValidationError("expected PATH=FILE: \(answer)")
            }
            let file = String(answer[answer.index(after: equals)...])
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            bodies.append((String(answer[..<equals]), ByteBuffer(bytes: bytes)))
        }
        let headers: HTTPFields = [.contentType: "application/json"]
        switch plumbing {
        case .bare:
            let router = Router()
            for (path, body) in bodies {
                router.get(RouterPath(path)) { _, _ in
                    Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
                }
            }
            var logger = Logger(label: "http-floor")
            logger.logLevel = .warning
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
            try await app.runService()
        case .service:
            let settings = try ServiceSettings(
                name: "orbitcove-http-floor", defaultPort: port,
                environment: Environment(["ORBITCOVE_HTTP_PORT": String(port), "ORBITCOVE_LOG_LEVEL": "warning"]))
            let runtime = ServiceRuntime.bootstrapProcess(settings: settings)
            let router = runtime.makeRouter(checks: [], verifier: nil)
            for (path, body) in bodies {
                router.get(RouterPath(path)) { _, _ in
                    Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
                }
            }
            try await runtime.makeApplication(ServiceParts(router: router, services: [])).runService()
        }
    }
}
