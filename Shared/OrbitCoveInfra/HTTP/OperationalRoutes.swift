import Foundation
import Hummingbird
import Prometheus

/// A dependency `/ready` checks. A non-critical one (Redis: the API keeps serving without its
/// cache, with degraded rate limiting) reports `degraded` but leaves the service ready.
package struct ReadinessCheck: Sendable {
    package let name: String
    package let critical: Bool
    package let probe: @Sendable () async throws -> Void

    package init(_ name: String, critical: Bool = true, probe: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.critical = critical
        self.probe = probe
    }
}

package struct ReadinessReport: Codable, Sendable, Equatable {
    package var status: String
    package var checks: [String: String]

    package init(status: String, checks: [String: String]) {
        self.status = status
        self.checks = checks
    }
}

/// `/health` (the process is alive), `/ready` (its dependencies answer) and `/metrics`
/// (Prometheus text). Served on every service's own port; the gateway does not expose them.
package enum OperationalRoutes {
    package static func add(
        to router: Router<AppRequestContext>, service: String, checks: [ReadinessCheck],
        registry: PrometheusCollectorRegistry
    ) {
        router.get("/health") { _, _ in
            try Response.json(["status": "ok", "service": service])
        }
        router.get("/ready") { _, _ in
            let report = await readiness(checks)
            return try Response.json(report, status: report.status == "unavailable" ? .serviceUnavailable : .ok)
        }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }

    /// Runs every check at once, each bounded by `timeout`.
    package static func readiness(_ checks: [ReadinessCheck], timeout: Duration = .seconds(2)) async -> ReadinessReport
    {
        let results = await withTaskGroup(of: (ReadinessCheck, String?).self) { group in
            for check in checks {
                group.addTask {
                    do {
                        try await withTimeout(timeout) { try await check.probe() }
                        return (check, nil)
                    } catch {
                        return (check, logDescription(of: error))
                    }
                }
            }
            var results: [(ReadinessCheck, String?)] = []
            for await result in group { results.append(result) }
            return results
        }
        var report = ReadinessReport(status: "ready", checks: [:])
        for (check, failure) in results {
            report.checks[check.name] = failure == nil ? "ok" : "failing"
            if failure != nil {
                if check.critical {
                    report.status = "unavailable"
                } else if report.status == "ready" {
                    report.status = "degraded"
                }
            }
        }
        return report
    }
}

package struct TimeoutError: Error, CustomStringConvertible {
    package var description: String { "timed out" }
}

/// Runs `body`, giving up after `timeout`.
package func withTimeout<Result: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimeoutError()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
