import OrbitCoveModels

/// The checks APNs applies to a push request's headers, device token and payload, with Apple's
/// documented status and reason for each ("Sending notification requests to APNs", "Handling
/// notification responses from APNs"). The provider token is checked apart, in `ProviderTokenCheck`.
enum PushRequestCheck {
    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets", "controls",
    ]
    static let priorities: Set<String> = ["1", "5", "10"]
    static let maximumCollapseIdBytes = 64
    static let maximumPayloadBytes = 4096
    /// VoIP notifications may be larger.
    static let maximumVoIPPayloadBytes = 5120
    static let deviceTokenLengths = 64...200
    /// Headers whose repetition APNs rejects.
    static let singleHeaders = [
        "authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-collapse-id", "apns-expiration",
        "apns-id",
    ]

    /// The checks that need no provider token: method, path and repeated headers.
    static func checkRequestLine(_ request: PushRequest) throws(Rejection) {
        guard request.method == .POST else { throw Rejection(status: 405, reason: "MethodNotAllowed") }
        guard request.deviceToken != nil else { throw Rejection(status: 404, reason: "BadPath") }
        for name in singleHeaders where request.headers[name].count > 1 {
            throw .badRequest("DuplicateHeaders")
        }
    }

    /// The `apns-*` headers, then the device token, then the payload; returns the payload as JSON.
    static func checkNotification(_ request: PushRequest) throws(Rejection) -> [String: JSONValue] {
        try checkHeaders(request)
        try checkDeviceToken(request.deviceToken ?? "")
        return try checkPayload(request)
    }

    static func checkHeaders(_ request: PushRequest) throws(Rejection) {
        guard let topic = request.header("apns-topic"), !topic.isEmpty else { throw .badRequest("MissingTopic") }
        guard let pushType = request.header("apns-push-type"), pushTypes.contains(pushType) else {
            throw .badRequest("InvalidPushType")
        }
        if let priority = request.header("apns-priority"), !priorities.contains(priority) {
            throw .badRequest("BadPriority")
        }
        if let expiration = request.header("apns-expiration"), !isUnsignedInteger(expiration) {
            throw .badRequest("BadExpirationDate")
        }
        if let collapseId = request.header("apns-collapse-id"), collapseId.utf8.count > maximumCollapseIdBytes {
            throw .badRequest("BadCollapseId")
        }
        if let apnsId = request.header("apns-id"), !isCanonicalUUID(apnsId) { throw .badRequest("BadMessageId") }
    }

    static func checkDeviceToken(_ token: String) throws(Rejection) {
        guard !token.isEmpty else { throw .badRequest("MissingDeviceToken") }
        guard deviceTokenLengths.contains(token.utf8.count), token.utf8.allSatisfy(isHexDigit) else {
            throw .badRequest("BadDeviceToken")
        }
    }

    static func checkPayload(_ request: PushRequest) throws(Rejection) -> [String: JSONValue] {
        let limit = request.header("apns-push-type") == "voip" ? maximumVoIPPayloadBytes : maximumPayloadBytes
        guard request.bodyLength <= limit else { throw Rejection(status: 413, reason: "PayloadTooLarge") }
        guard request.bodyLength > 0 else { throw .badRequest("PayloadEmpty") }
        // Apple lists no reason for a body that is not a JSON dictionary; this one is ours.
        guard let payload = JSONValue(parsing: request.body)?.objectValue else { throw .badRequest("BadPayload") }
        return payload
    }

    private static func isUnsignedInteger(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// ASCII only: `Character.isHexDigit` also takes the full-width digits.
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }

    /// 8-4-4-4-12 hexadecimal digits, either case.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.utf8.allSatisfy(isHexDigit) }
    }
}
