import CoreService
import OrbitCoveInfra

// Core writes responses of a megabyte and more (calendar windows): keep their memory in the heap.
HeapSettings.apply()
await ServiceRuntime.main(name: "orbitcove-core", defaultPort: CoreApplication.defaultPort) { runtime in
    try await CoreApplication.build(runtime: runtime)
}
