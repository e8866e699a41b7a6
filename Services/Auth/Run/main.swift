import AuthService
import OrbitCoveInfra

await ServiceRuntime.main(name: "orbitcove-auth", defaultPort: AuthApplication.defaultPort) { runtime in
    try await AuthApplication.build(runtime: runtime)
}
