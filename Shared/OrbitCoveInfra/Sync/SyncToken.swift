import Foundation

/// `v1|<snapshot>|<issued at, µs>`, base64url: opaque to clients.
package struct SyncToken: Equatable, Sendable {
    static let version = "v1"
    package var snapshot: String
    package var issuedAt: Date

    package init(snapshot: String, issuedAt: Date) {
        self.snapshot = snapshot
        self.issuedAt = issuedAt
    }

    package init(text: String, field: String = "since") throws {
        let invalid = APIError.validation([field: "is not a sync token this API issued"])
        let parts = try OpaqueToken.parts(of: text, maxLength: 4096, orThrow: invalid)
        guard parts.count == 3, parts[0] == Self.version, let micros = Int64(parts[2]), Self.isSnapshot(parts[1])
        else { throw invalid }
        self.snapshot = String(parts[1])
        self.issuedAt = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    /// `xmin:xmax:xip,...` as PostgreSQL writes a snapshot, with xmin ≤ xip < xmax (what
    /// PostgreSQL would refuse must be the client's error, not ours).
    static func isSnapshot(_ text: Substring) -> Bool { PostgresSnapshot(text) != nil }

    package var text: String {
        let micros = ExactTimestamp.microsecondsSince1970(issuedAt)
        return OpaqueToken.make([Self.version, snapshot, String(micros)])
    }
}

/// Where a paged first sync goes on: the sync token it started with, the kind, and the last
/// id sent of that kind.
package struct SyncPageToken: Equatable, Sendable {
    package var token: SyncToken
    package var kindIndex: Int
    package var after: UUID?

    package init(token: SyncToken, kindIndex: Int, after: UUID?) {
        self.token = token
        self.kindIndex = kindIndex
        self.after = after
    }

    package init(text: String) throws {
        let invalid = APIError.validation(["page": "is not a page token this API issued"])
        let parts = try OpaqueToken.parts(of: text, maxLength: 8192, orThrow: invalid)
        guard parts.count == 4, parts[0] == "p1", let kindIndex = Int(parts[2]), (0...1000).contains(kindIndex),
            let token = try? SyncToken(text: String(parts[1]))
        else { throw invalid }
        let after = parts[3].isEmpty ? nil : UUID(uuidString: String(parts[3]))
        guard parts[3].isEmpty || after != nil else { throw invalid }
        self.init(token: token, kindIndex: kindIndex, after: after)
    }

    package var text: String {
        OpaqueToken.make(["p1", token.text, String(kindIndex), after?.lowercasedString ?? ""])
    }
}
