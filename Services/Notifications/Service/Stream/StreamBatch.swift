import Foundation
import Logging
import OrbitCoveInfra
import PostgresNIO

/// What the change feed publishes on one shard's Redis channel: the changes to that shard's
/// communities that the snapshot `next` sees and `previous` (the snapshot of the shard's
/// last publication) did not. Consecutive batches of a shard chain `previous` to `next`, so an
/// instance that holds a client at `previous` can move it to `next` from the batch alone, and
/// one that cannot (it missed a batch, or the client came with an older token) reads the log.
struct StreamBatch: Codable, Sendable {
    /// Communities are spread over this many channels: a fixed number, so every instance and
    /// the feed agree on it with nothing to coordinate, small enough that an instance simply
    /// subscribes to all of them (each publication is one shard's, so an instance's work per
    /// message follows that shard's traffic), and more than the cores of any instance, so a
    /// Redis Cluster can spread them over nodes as sharded channels.
    static let shards = 16
    /// A batch with more changes than this names its communities instead, to be read from
    /// the log by whoever follows them (a bulk import makes tens of thousands at once).
    static let largestInline = 2000

    /// A shard's channel. `namespace` names the database (``namespace(on:logger:)``): one
    /// PostgreSQL cluster's snapshots mean the same in all its databases, so a batch of another
    /// database sharing the Redis would pass for one of this database's and move clients past
    /// changes it never carried.
    static func channel(_ shard: Int, in namespace: String) -> String { "orbitcove:stream:\(namespace):\(shard)" }
    static func channels(in namespace: String) -> [String] { (0..<shards).map { channel($0, in: namespace) } }

    /// Present while some instance has a stream open (each hub says so every second, for
    /// ``listeningSeconds``): the change feed's reader reads the log at its poll while it is,
    /// and only at its tick while it is not.
    static func listeningKey(in namespace: String) -> String { "orbitcove:stream:\(namespace):listening" }
    static let listeningSeconds = 3
    /// Where a hub announces that its word started the listening (it set the listening key
    /// where none was): an idle change feed's reader sleeps until its tick or this.
    static func arrivalsChannel(in namespace: String) -> String { "orbitcove:stream:\(namespace):arrivals" }

    /// The database's name and oid.
    static func namespace(on connection: PostgresConnection, logger: Logger) async throws -> String {
        for try await (name, oid) in try await connection.query(
            "SELECT datname::text, oid::int8 FROM pg_database WHERE datname = current_database()", logger: logger
        ).decode((String, Int64).self) {
            return "\(name)-\(oid)"
        }
        throw StreamFeedError(message: "the current database is not in pg_database")
    }

    /// The kind of a change to a user's own notifications: `community` and `id` are the user.
    static let unread = "unread"

    static func shard(of community: UUID) -> Int { Int(community.uuid.15) % shards }

    struct Change: Codable, Sendable, Equatable {
        var community: UUID
        var kind: String
        var id: UUID
        var operation: String
        var txid: UInt64

        enum CodingKeys: String, CodingKey {
            case community = "c", kind = "k", id = "i", operation = "o", txid = "x"
        }

        /// `changes` (in log order) with one entry per row per commit, where it first came: a
        /// commit logs a row once per write to it (an expense's row, then the totals its splits
        /// write back), and sync lists it once. The entry says what the commit left: a deletion
        /// if its last write deleted the row, an insertion if its first made it, else its last.
        static func oncePerCommit(_ changes: [Change]) -> [Change] {
            struct Row: Hashable {
                var community: UUID
                var kind: String
                var id: UUID
                var txid: UInt64
            }
            var kept: [Change] = []
            var first: [String] = []
            var at: [Row: Int] = [:]
            for change in changes {
                let row = Row(community: change.community, kind: change.kind, id: change.id, txid: change.txid)
                guard let index = at[row] else {
                    at[row] = kept.count
                    kept.append(change)
                    first.append(change.operation)
                    continue
                }
                kept[index].operation =
                    change.operation != "delete" && first[index] == "insert" ? "insert" : change.operation
            }
            return kept
        }
    }

    var shard: Int
    /// Nil when the feed's reader has just taken over: nothing chains to it.
    var previous: String?
    var next: String
    /// When `next` was taken (microseconds since 1970): the sync tokens' issue time.
    var readAt: Int64
    /// Nil when there were more than ``largestInline``: then `communities` says whose to read.
    var changes: [Change]?
    var communities: [UUID]?

    enum CodingKeys: String, CodingKey {
        case shard = "s", previous = "p", next = "n", readAt = "t", changes = "c", communities = "m"
    }

    /// The sync token a client holds once it has this batch.
    var token: SyncToken {
        SyncToken(snapshot: next, issuedAt: Date(timeIntervalSince1970: Double(readAt) / 1_000_000))
    }
}
