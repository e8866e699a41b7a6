// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-warnings-as-errors"]),
]

let hummingbird = Target.Dependency.product(name: "Hummingbird", package: "hummingbird")
let lifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let postgres = Target.Dependency.product(name: "PostgresNIO", package: "postgres-nio")

/// One library (what tests import) and one thin executable per service.
func service(_ name: String, executable: String, extra: [Target.Dependency] = []) -> [Target] {
    [
        .target(
            name: "\(name)Service",
            dependencies: ["OrbitCoveModels", "OrbitCoveInfra", hummingbird, lifecycle, logging, postgres] + extra,
            path: "Services/\(name)/Service",
            swiftSettings: strict
        ),
        .executableTarget(
            name: executable,
            dependencies: [.target(name: "\(name)Service"), "OrbitCoveInfra"],
            path: "Services/\(name)/Run",
            swiftSettings: strict
        ),
    ]
}

let package = Package(
    name: "OrbitCove",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "orbitcove-auth", targets: ["orbitcove-auth"]),
        .executable(name: "orbitcove-core", targets: ["orbitcove-core"]),
        .executable(name: "orbitcove-notifications", targets: ["orbitcove-notifications"]),
        .executable(name: "orbitcove-media", targets: ["orbitcove-media"]),
        .executable(name: "orbitcove-reminders", targets: ["orbitcove-reminders"]),
        .executable(name: "orbitcove-admin", targets: ["orbitcove-admin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Tests only: generated inputs for the encoder's comparison with JSONEncoder.
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // C libraries from Debian, and the shims Swift needs to call their variadic functions.
        .systemLibrary(
            name: "CRabbitMQ",
            path: "Shared/CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        .systemLibrary(
            name: "CHiredis",
            path: "Shared/CHiredis",
            pkgConfig: "hiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),
        .target(
            name: "COrbitShims",
            dependencies: ["CRabbitMQ"],
            path: "Shared/COrbitShims"
        ),
        // libvips for the media service's images, and the fixed-signature calls Swift needs.
        .systemLibrary(
            name: "CVips",
            path: "Shared/CVips",
            pkgConfig: "vips",
            providers: [.apt(["libvips-dev"])]
        ),
        .target(
            name: "CVipsShims",
            dependencies: ["CVips"],
            path: "Shared/CVipsShims"
        ),

        // Data types and message contracts: no I/O, no framework imports.
        .target(name: "OrbitCoveModels", path: "Shared/OrbitCoveModels", swiftSettings: strict),

        // RFC 5545 recurrence (our own expansion, checked against python-dateutil) and the ICS
        // writer: pure Foundation, used by the calendar and the reminders.
        .target(name: "OrbitCoveCalendar", path: "Shared/OrbitCoveCalendar", swiftSettings: strict),

        // Infrastructure clients and HTTP plumbing shared by every service.
        .target(
            name: "OrbitCoveInfra",
            dependencies: [
                "OrbitCoveModels", "CRabbitMQ", "CHiredis", "COrbitShims",
                hummingbird, lifecycle, logging, postgres,
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Shared/OrbitCoveInfra",
            resources: [.copy("Migrations")],
            swiftSettings: strict
        ),
    ]
        + service(
            "Auth", executable: "orbitcove-auth",
            extra: [.product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto")])
        + service(
            "Core", executable: "orbitcove-core",
            extra: ["OrbitCoveCalendar", .product(name: "Crypto", package: "swift-crypto")])
        + service(
            "Notifications", executable: "orbitcove-notifications",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            ])
        + service(
            "Media", executable: "orbitcove-media",
            extra: [
                "CVipsShims",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
            ])
        + service(
            "Reminders", executable: "orbitcove-reminders",
            extra: ["OrbitCoveCalendar", .product(name: "Crypto", package: "swift-crypto")])
        + [
            .target(
                name: "AdminCommands",
                dependencies: [
                    "OrbitCoveInfra", "OrbitCoveModels", logging, postgres,
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                ],
                path: "Services/Admin/Commands",
                swiftSettings: strict
            ),
            // Measures messaging through our code; scripts/bench/messaging.sh runs it beside a C reference.
            .executableTarget(
                name: "orbitcove-bench",
                dependencies: [
                    "OrbitCoveInfra", "OrbitCoveModels", logging, lifecycle, postgres,
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                ],
                path: "Benchmarks/MessagingBenchmark",
                swiftSettings: strict
            ),
            // A pgbench script's statements through PostgresNIO: the driver's share of a read, printed
            // beside pgbench by scripts/bench/core-read.sh and calendar.sh.
            .executableTarget(
                name: "orbitcove-sql-bench",
                dependencies: [
                    "OrbitCoveInfra", logging, postgres,
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                ],
                path: "Benchmarks/SQLBenchmark",
                swiftSettings: strict
            ),
            // Fixed answers on Hummingbird alone and on the services' plumbing: the framework's share
            // of a cached read, printed beside it by scripts/bench/core-read.sh.
            .executableTarget(
                name: "orbitcove-http-floor",
                dependencies: [
                    "OrbitCoveInfra", logging, hummingbird,
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                ],
                path: "Benchmarks/HTTPFloor",
                swiftSettings: strict
            ),
            // JSONCoding.encoder beside JSONEncoder on realistic responses; scripts/bench/json.sh runs it.
            .executableTarget(
                name: "orbitcove-json-bench",
                dependencies: ["OrbitCoveInfra", "OrbitCoveModels"],
                path: "Benchmarks/JSONBenchmark",
                swiftSettings: strict
            ),
            // Drivers for scripts/calendar/: our recurrence expansion and ICS feeds, compared in
            // `make calendar-check` with python-dateutil, icalendar and recurring-ical-events.
            .executableTarget(
                name: "orbitcove-rrule-dump", dependencies: ["OrbitCoveCalendar"], path: "Tools/RRuleDump",
                swiftSettings: strict),
            // Our SigV4 signatures for requests read on stdin: `make media-check` compares them
            // with botocore's.
            .executableTarget(
                name: "orbitcove-sigv4-dump", dependencies: ["MediaService"], path: "Tools/SigV4Dump",
                swiftSettings: strict),
            .executableTarget(
                name: "orbitcove-ics-dump", dependencies: ["OrbitCoveCalendar"], path: "Tools/ICSDump",
                swiftSettings: strict),
            // A local endpoint that answers as Apple's push service does (HTTP/2 over TLS, provider
            // tokens checked, status codes and reasons): the notifications tests and the push
            // benchmark run the production APNs provider against it.
            .target(
                name: "APNsStandIn",
                dependencies: [
                    "OrbitCoveModels", logging,
                    .product(name: "NIOCore", package: "swift-nio"),
                    .product(name: "NIOPosix", package: "swift-nio"),
                    .product(name: "NIOHTTP1", package: "swift-nio"),
                    .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                    .product(name: "NIOSSL", package: "swift-nio-ssl"),
                    .product(name: "Crypto", package: "swift-crypto"),
                ],
                path: "Tools/APNsStandIn",
                swiftSettings: strict),
            .executableTarget(
                name: "orbitcove-apns-standin",
                dependencies: ["APNsStandIn", .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Tools/APNsStandInRun",
                swiftSettings: strict),
            .executableTarget(
                name: "orbitcove-admin",
                dependencies: ["AdminCommands", .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Services/Admin/Run",
                swiftSettings: strict
            ),
            .testTarget(
                name: "OrbitCoveTests",
                dependencies: [
                    "OrbitCoveModels", "OrbitCoveInfra", "OrbitCoveCalendar",
                    "AuthService", "CoreService", "NotificationsService", "MediaService", "RemindersService",
                    "AdminCommands", "APNsStandIn", hummingbird, lifecycle, logging, postgres,
                    .product(name: "HummingbirdTesting", package: "hummingbird"),
                    .product(name: "AsyncHTTPClient", package: "async-http-client"),
                    .product(name: "JWTKit", package: "jwt-kit"),
                    .product(name: "_CryptoExtras", package: "swift-crypto"),
                    .product(name: "Yams", package: "Yams"),
                    .product(name: "PropertyBased", package: "swift-property-based"),
                    .product(name: "WSClient", package: "swift-websocket"),
                    .product(name: "NIOWebSocket", package: "swift-nio"),
                ],
                path: "Tests/OrbitCoveTests",
                swiftSettings: strict
            ),
        ]
)
