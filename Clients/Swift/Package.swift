// swift-tools-version: 6.1
// The iOS app's client, generated from deploy/openapi/openapi.yaml by swift-openapi-generator's
// build plugin. A package of its own, so the services' build never pays for the generator.
import PackageDescription

let package = Package(
    name: "OrbitCoveClient",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "OrbitCoveClient", targets: ["OrbitCoveClient"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .target(
            name: "OrbitCoveClient",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .testTarget(
            name: "OrbitCoveClientTests",
            dependencies: ["OrbitCoveClient"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
