import CoreService
import OrbitCoveInfra

await ServiceRuntime.main(name: "orbitcove-core", defaultPort: CoreApplication.defaultPort) { runtime in
    try await CoreApplication.build(runtime: runtime)
}
