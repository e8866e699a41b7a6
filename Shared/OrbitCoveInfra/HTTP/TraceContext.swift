import Foundation

/// W3C `traceparent` values (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`), so one
/// request can be followed through the messages it causes, across services, in the logs.
package enum TraceContext {
    /// A new span in the caller's trace when the request brought a valid `traceparent`;
    /// otherwise a new trace, whose id is the request id when that is 32 hex digits (nginx's
    /// `$request_id` is), so the two can be matched.
    package static func child(of incoming: String?, requestId: String) -> String {
        let traceId: String
        if let incoming, let parent = parse(incoming) {
            traceId = parent.traceId
        } else if isHex(requestId, count: 32), requestId != String(repeating: "0", count: 32) {
            traceId = requestId.lowercased()
        } else {
            traceId = randomHex(bytes: 16)
        }
        return "00-\(traceId)-\(randomHex(bytes: 8))-01"
    }

    package static func parse(_ value: String) -> (traceId: String, spanId: String)? {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == "00", isHex(parts[1], count: 32), isHex(parts[2], count: 16),
            isHex(parts[3], count: 2), parts[1] != String(repeating: "0", count: 32),
            parts[2] != String(repeating: "0", count: 16)
        else { return nil }
        return (parts[1].lowercased(), parts[2].lowercased())
    }

    private static func isHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    private static func randomHex(bytes: Int) -> String {
        randomBytes(bytes).lowerHex
    }
}
