import Foundation
import Glibc

/// The peers whose `X-Real-IP` is believed: addresses or CIDR ranges (`10.0.0.0/8`,
/// `fd00::/8`), so a gateway whose container or pod address changes can still be named.
package struct TrustedProxies: Sendable, Equatable {
    struct Range: Sendable, Equatable {
        var bytes: [UInt8]
        var prefixLength: Int
    }
    let ranges: [Range]

    /// Parses `entries`; a malformed one is a configuration error naming it.
    package init(_ entries: [String]) throws {
        ranges = try entries.map { entry in
            let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let bytes = Self.bytes(of: String(parts[0])) else {
                throw ConfigurationError(
                    variable: "ORBITCOVE_TRUSTED_PROXIES", reason: "not an address or range: \(entry)")
            }
            let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let length, (0...(bytes.count * 8)).contains(length) else {
                throw ConfigurationError(variable: "ORBITCOVE_TRUSTED_PROXIES", reason: "bad prefix length: \(entry)")
            }
            return Range(bytes: bytes, prefixLength: length)
        }
    }

    package func contains(_ address: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        return ranges.contains { range in
            guard range.bytes.count == bytes.count else { return false }
            var remaining = range.prefixLength
            for (ours, theirs) in zip(range.bytes, bytes) where remaining > 0 {
                let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
                if ours & mask != theirs & mask { return false }
                remaining -= 8
            }
            return true
        }
    }

    /// 4 bytes for IPv4, 16 for IPv6, nil for anything else.
    static func bytes(of address: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
