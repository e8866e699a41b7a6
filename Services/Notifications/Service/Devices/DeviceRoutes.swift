import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/me/devices`: where the caller's pushes go.
struct DeviceRoutes {
    let store: DeviceStore
    /// The app bundle ids this service pushes to; empty accepts any.
    let topics: Set<String>

    func register(on router: Router<AppRequestContext>) {
        let devices = router.group("/api/v1/me/devices")
        devices.post { request, context in
            let userId = try context.requireUser()
            let registration = try await read(request, context)
            let (device, isNew) = try await store.register(registration, for: userId)
            return try Response.data(device, status: isNew ? .created : .ok, requestId: context.requestId)
        }
        devices.get { _, context in
            let userId = try context.requireUser()
            return try Response.data(try await store.devices(of: userId), requestId: context.requestId)
        }
        devices.delete(":token") { _, context in
            let userId = try context.requireUser()
            guard let token = context.parameters.get("token").flatMap(Self.token) else { throw DeviceStore.notFound }
            try await store.remove(token, of: userId)
            return Response(status: .noContent)
        }
    }

    private func read(_ request: Request, _ context: AppRequestContext) async throws -> DeviceStore.Registration {
        var reader = try await FieldReader.read(
            request, context: context, allowed: ["token", "environment", "bundleId", "locale"], nullClears: false)
        // Identifiers, taken as sent (not trimmed): what the device reported, or a refusal.
        let token = Self.string(&reader, "token", maxLength: 200, required: true)
        let environment = reader.choice("environment", as: PushEnvironment.self).value
        let bundleId = Self.string(&reader, "bundleId", maxLength: 155, required: true)
        let locale = Self.string(&reader, "locale", maxLength: 35, required: false)
        if reader.fields["environment"] == nil { reader.problems["environment"] = "is required" }
        if let token, Self.token(token) == nil {
            reader.problems["token"] = "must be an APNs device token: 64 to 200 hexadecimal digits"
        }
        if let bundleId, !Self.isBundleId(bundleId) {
            reader.problems["bundleId"] = "must be an app bundle id (letters, digits, dots and hyphens)"
        } else if let bundleId, !topics.isEmpty, !topics.contains(bundleId) {
            reader.problems["bundleId"] = "is not an app this service sends notifications to"
        }
        if let locale, !Self.isLocale(locale) { reader.problems["locale"] = "must be a locale such as en-GB" }
        try reader.check()
        guard let token = token.flatMap(Self.token), let environment, let bundleId else { throw APIError.internalError }
        return DeviceStore.Registration(token: token, environment: environment, bundleId: bundleId, locale: locale)
    }

    private static func string(
        _ reader: inout FieldReader, _ key: String, maxLength: Int, required: Bool
    ) -> String? {
        switch reader.fields[key] {
        case nil:
            if required { reader.problems[key] = "is required" }
            return nil
        case .string(let text) where !text.isEmpty && text.utf8.count <= maxLength:
            return text
        default:
            reader.problems[key] = "must be a string of 1 to \(maxLength) characters"
            return nil
        }
    }

    /// A device token in the spelling stored: lowercase hexadecimal.
    static func token(_ text: String) -> String? {
        let token = text.lowercased()
        guard (64...200).contains(token.utf8.count), token.utf8.allSatisfy({ $0.isHexDigit }) else { return nil }
        return token
    }

    static func isBundleId(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0.isASCIILetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    static func isLocale(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let language = parts.first, (2...3).contains(language.utf8.count),
            language.utf8.allSatisfy({ $0.isASCIILetterOrDigit && !$0.isASCIIDigit })
        else { return false }
        return parts.dropFirst().allSatisfy {
            (1...8).contains($0.utf8.count) && $0.utf8.allSatisfy(\.isASCIILetterOrDigit)
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool { isASCIIDigit || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self) }
    fileprivate var isASCIIDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    fileprivate var isASCIILetterOrDigit: Bool {
        isASCIIDigit || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}
