import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// `/me/devices`: a token registers, refreshes, moves to the newest user who registers it,
/// and goes; what is not a token or not our app is refused by name.
@Suite struct DeviceTests {
    @Test func aTokenBelongsToTheNewestUserWhoRegistersIt() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let (ada, ben) = (try await api.signIn("Ada"), try await api.signIn("Ben"))
                let token = try await harness.device(for: ada)
                let body =
                    #"{"token":"\#(token.uppercased())","environment":"production","bundleId":"\#(SharedAPNs.topic)","locale":"de-DE"}"#
                let refreshed = try await harness.call(.post, "/api/v1/me/devices", as: ada, json: body)
                #expect(refreshed.status == .ok)
                let device = try refreshed.data(Device.self)
                #expect(device.token == token && device.environment == .production && device.locale == "de-DE")
                #expect(device.updatedAt > device.createdAt)

                let moved = try await harness.call(.post, "/api/v1/me/devices", as: ben, json: body)
                #expect(moved.status == .created)
                #expect(try await harness.call(.get, "/api/v1/me/devices", as: ada).data([Device].self).isEmpty)
                #expect(
                    try await harness.call(.get, "/api/v1/me/devices", as: ben).data([Device].self).map(\.token) == [
                        token
                    ])

                let foreign = try await harness.call(.delete, "/api/v1/me/devices/\(token)", as: ada)
                #expect(foreign.status == .notFound && foreign.errorCode == "DEVICE_NOT_FOUND")
                #expect(try await harness.call(.delete, "/api/v1/me/devices/\(token)", as: ben).status == .noContent)
                #expect(try await harness.call(.delete, "/api/v1/me/devices/\(token)", as: ben).status == .notFound)
                #expect(try await harness.call(.delete, "/api/v1/me/devices/zz", as: ben).status == .notFound)
            }
        }
    }

    @Test func whatIsNotATokenOrNotOurAppIsRefused() async throws {
        try await CoreHarness.run { api in
            try await NotificationsHarness.run(api) { harness in
                let ada = try await api.signIn("Ada")
                let token = String(repeating: "ab", count: 32)
                let cases: [(String, String)] = [
                    (#"{"environment":"sandbox","bundleId":"app.orbitcove.tests"}"#, "token"),
                    (#"{"token":"abc","environment":"sandbox","bundleId":"app.orbitcove.tests"}"#, "token"),
                    (
                        #"{"token":"\#(String(repeating: "g", count: 64))","environment":"sandbox","bundleId":"app.orbitcove.tests"}"#,
                        "token"
                    ),
                    (#"{"token":"\#(token)","bundleId":"app.orbitcove.tests"}"#, "environment"),
                    (#"{"token":"\#(token)","environment":"staging","bundleId":"app.orbitcove.tests"}"#, "environment"),
                    (#"{"token":"\#(token)","environment":"sandbox"}"#, "bundleId"),
                    (#"{"token":"\#(token)","environment":"sandbox","bundleId":"com.evil.app"}"#, "bundleId"),
                    (#"{"token":"\#(token)","environment":"sandbox","bundleId":"app orbitcove"}"#, "bundleId"),
                    (
                        #"{"token":"\#(token)","environment":"sandbox","bundleId":"app.orbitcove.tests","locale":"1234"}"#,
                        "locale"
                    ),
                    (
                        #"{"token":"\#(token)","environment":"sandbox","bundleId":"app.orbitcove.tests","colour":"red"}"#,
                        "colour"
                    ),
                ]
                for (body, field) in cases {
                    let reply = try await harness.call(.post, "/api/v1/me/devices", as: ada, json: body)
                    #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(body)")
                    #expect(reply.fieldErrors[field] != nil, "\(body) should name \(field): \(reply.fieldErrors)")
                }
                let anonymous = try await harness.call(.get, "/api/v1/me/devices", as: nil)
                #expect(anonymous.status == .unauthorized)
            }
        }
    }
}
