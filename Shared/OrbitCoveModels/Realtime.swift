import Foundation

/// `POST /api/v1/me/stream-tickets`: a single-use ticket for opening the realtime stream from a
/// client that cannot set headers on a WebSocket upgrade (`GET /api/v1/me/stream?ticket=…`).
package struct StreamTicket: Codable, Sendable, Equatable {
    package var ticket: String
    package var expiresAt: Date

    package init(ticket: String, expiresAt: Date) {
        self.ticket = ticket
        self.expiresAt = expiresAt
    }
}

/// A text frame a client sends on the stream.
///
/// - `{"type":"subscribe","communities":[{"communityId":"…","syncToken":"…"}]}`: follow these
///   communities from the sync tokens the client holds (the last sync's, or the last change's).
/// - `{"type":"unsubscribe","communityIds":["…"]}`.
package struct StreamClientFrame: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable { case subscribe, unsubscribe }

    package var type: Kind
    package var communities: [StreamSubscription]?
    package var communityIds: [UUID]?

    package init(type: Kind, communities: [StreamSubscription]? = nil, communityIds: [UUID]? = nil) {
        self.type = type
        self.communities = communities
        self.communityIds = communityIds
    }
}

package struct StreamSubscription: Codable, Sendable, Equatable {
    package var communityId: UUID
    package var syncToken: String?

    package init(communityId: UUID, syncToken: String?) {
        self.communityId = communityId
        self.syncToken = syncToken
    }
}

/// A text frame the server sends on the stream (fields absent where they do not apply).
package struct StreamFrame: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        /// One `change_log` entry: `communityId`, `kind`, `id`, `operation` and the `syncToken`
        /// after it (a valid resume point, for the stream and for sync).
        case change
        /// The community is followed from `syncToken`: what changed since the client's token
        /// has been sent (the changes before this frame), live changes follow.
        case subscribed
        /// The client's token is older than sync keeps, was missing, or is more than
        /// `SyncEngine.mostChanges` changes behind: run a full sync, then subscribe with its
        /// token. (Sent for a followed community whose catch-up finds that many, too; it stays
        /// followed.)
        case reset
        /// The caller may not follow this community (`code`: `COMMUNITY_NOT_FOUND`,
        /// `TOO_MANY_SUBSCRIPTIONS`, `VALIDATION_FAILED`); the others are served.
        case refused
        /// The caller is no longer a member: nothing more of it is sent.
        case removed
        /// The caller joined a community while connected: it is followed from `syncToken`
        /// (run a full sync of it once).
        case joined
        /// The caller's unread notifications: `count`, sent on connecting and when it changes.
        case unread
    }

    package var type: Kind
    package var communityId: UUID?
    package var kind: String?
    package var id: UUID?
    package var operation: String?
    package var syncToken: String?
    package var code: String?
    package var message: String?
    package var count: Int?

    package init(
        type: Kind, communityId: UUID? = nil, kind: String? = nil, id: UUID? = nil, operation: String? = nil,
        syncToken: String? = nil, code: String? = nil, message: String? = nil, count: Int? = nil
    ) {
        self.type = type
        self.communityId = communityId
        self.kind = kind
        self.id = id
        self.operation = operation
        self.syncToken = syncToken
        self.code = code
        self.message = message
        self.count = count
    }
}

/// How the server closes a stream, beside WebSocket's own codes (1008 for a frame that breaks
/// the protocol's rules here, 1009 for one over the size limit).
package enum StreamCloseCode: UInt16, Sendable {
    /// The access token the stream was opened with expired: reconnect with a new one.
    case tokenExpired = 4001
    /// The client read too slowly: more frames waited for it than the stream keeps.
    case tooSlow = 4002
    /// The user already has as many streams open as allowed.
    case tooManyStreams = 4003
    /// The account was erased while the stream was open: do not reconnect.
    case accountDeleted = 4004
}
