import OrbitCoveInfra
import RemindersService

await ServiceRuntime.main(name: "orbitcove-reminders", defaultPort: RemindersApplication.defaultPort) { runtime in
    try await RemindersApplication.build(runtime: runtime)
}
