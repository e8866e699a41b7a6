import MediaService
import OrbitCoveInfra

await ServiceRuntime.main(name: "orbitcove-media", defaultPort: MediaApplication.defaultPort) { runtime in
    try await MediaApplication.build(runtime: runtime)
}
