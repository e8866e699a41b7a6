import Foundation

/// One entity kind's changes since a sync token: rows to insert, rows to replace, ids to drop.
package struct SyncSection<Item: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    package var created: [Item]
    package var updated: [Item]
    package var deleted: [UUID]

    package init(created: [Item] = [], updated: [Item] = [], deleted: [UUID] = []) {
        self.created = created
        self.updated = updated
        self.deleted = deleted
    }
}

/// `GET /communities/{id}/sync`: the seed's shape, a section per entity kind plus the token
/// for the next call (clients decode this; the server writes it section by section from the
/// kinds its features register). Events (as stored: series, overrides, single events) are in
/// their section, posts in theirs, the ledger's expenses and settlements (with their splits) in
/// `transactions`, dues (with the syncing member's standing) in `dues`, and uploads (their
/// status: a photo turns `ready`) in `media`.
package struct CommunitySync: Codable, Sendable, Equatable {
    /// Present when the community itself changed (or on a full sync).
    @ExplicitNull package var community: Community?
    package var members: SyncSection<CommunityMember>
    package var events: SyncSection<JSONValue>
    package var posts: SyncSection<JSONValue>
    package var transactions: SyncSection<LedgerTransaction>
    package var dues: SyncSection<Dues>
    package var media: SyncSection<Media>
    package var syncToken: String
    /// True when this is everything (no token, or one too old to continue from): replace, not merge.
    package var full: Bool
    /// While a first sync has more to send: fetch `?page=` with it (merge those pages), then use
    /// `syncToken`, which was taken before the first page was read.
    package var nextPage: String?

    package init(
        community: Community?, members: SyncSection<CommunityMember>, syncToken: String, full: Bool
    ) {
        self.community = community
        self.members = members
        self.events = SyncSection()
        self.posts = SyncSection()
        self.transactions = SyncSection()
        self.dues = SyncSection()
        self.media = SyncSection()
        self.syncToken = syncToken
        self.full = full
    }
}
