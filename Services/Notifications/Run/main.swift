import NotificationsService
import OrbitCoveInfra

await ServiceRuntime.main(name: "orbitcove-notifications", defaultPort: NotificationsApplication.defaultPort) {
    runtime in
    try await NotificationsApplication.build(runtime: runtime)
}
