import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// What one stream has sent: per community it follows, its position, the snapshot whose
/// changes the client has. A position only moves forward, to a snapshot that includes it, and
/// each move sends exactly the changes the new position sees and the old one did not:
///
/// - a batch the position already includes is skipped;
/// - a batch whose `previous` the position includes (the usual case: the last batch moved it
///   there) sends its changes the position does not see, and moves it to `next`;
/// - anything else (a batch was missed, the client resumed from an older token, the feed's
///   reader changed, a batch too large to carry its changes, or the user joined or left) reads
///   the log as the user from the position to a fresh snapshot.
///
/// So a change arrives once, whatever Redis loses or repeats, and a client that resumes from
/// the last token it was sent misses nothing and gets nothing twice.
///
/// Joins are found the same way: the session knows the user's communities as of its last read
/// of the log (the first when the stream opens), and every read that finds a community more
/// sends `joined` for it. A batch naming the user's join starts such a read; so does a batch
/// that follows a publication this instance missed (``StreamHub``), since the join may have
/// been in it.
struct StreamSession {
    let connection: StreamConnection
    let hub: StreamHub
    let log: StreamLog
    let maxSubscriptions: Int
    /// Called when the user's notifications changed: the stream sends a fresh unread count
    /// beside the changes, so counting never holds them up.
    let unreadChanged: @Sendable () -> Void
    private(set) var positions: [UUID: PostgresSnapshot] = [:]
    /// The user's communities as of `checked`, the snapshot of the last read of the log.
    private var known: Set<UUID> = []
    private var checked: PostgresSnapshot?
    /// A join found no room (``maxSubscriptions``): it is left out of `known` until announced.
    private var hasUnannouncedJoins = false

    init(
        connection: StreamConnection, hub: StreamHub, log: StreamLog, maxSubscriptions: Int,
        unreadChanged: @escaping @Sendable () -> Void
    ) {
        self.connection = connection
        self.hub = hub
        self.log = log
        self.maxSubscriptions = maxSubscriptions
        self.unreadChanged = unreadChanged
    }

    typealias Write = (StreamFrame) async throws -> Void

    /// Reads the user's communities as the stream opens (after it joined the hub, so a join
    /// committed after this read reaches it in a batch).
    mutating func start() async throws {
        let read = try await log.read(for: connection.userId, since: [:])
        (known, checked) = (read.memberOf, read.snapshot)
    }

    mutating func handle(_ event: StreamConnection.Event, write: Write) async throws {
        switch event {
        case .client(let frame):
            switch frame.type {
            case .subscribe: try await subscribe(frame.communities ?? [], write: write)
            case .unsubscribe:
                for community in frame.communityIds ?? [] where positions.removeValue(forKey: community) != nil {
                    hub.unfollow(community, by: connection)
                }
                // Room again for joins that found none: announced now.
                if hasUnannouncedJoins && positions.count < maxSubscriptions {
                    try await catchUp([], joins: [], write: write)
                }
            }
        case .batch(let batch, let afterGap):
            try await apply(batch, afterGap: afterGap, write: write)
        }
    }

    private mutating func subscribe(_ requests: [StreamSubscription], write: Write) async throws {
        var asked: [UUID: PostgresSnapshot] = [:]
        var order: [UUID] = []
        // Asked without a token: `reset` for a community of the caller's, `refused` for another.
        var tokenless: [UUID] = []
        for request in requests {
            let community = request.communityId
            guard asked[community] == nil else { continue }
            guard positions[community] != nil || positions.count + asked.count < maxSubscriptions else {
                try await write(
                    StreamFrame(
                        type: .refused, communityId: community, code: "TOO_MANY_SUBSCRIPTIONS",
                        message: "A stream follows at most \(maxSubscriptions) communities"))
                continue
            }
            guard let text = request.syncToken else {
                tokenless.append(community)
                continue
            }
            guard let token = try? SyncToken(text: text, field: "syncToken"),
                let snapshot = PostgresSnapshot(token.snapshot)
            else {
                try await write(
                    StreamFrame(
                        type: .refused, communityId: community, code: "VALIDATION_FAILED",
                        message: "syncToken is not a sync token this API issued"))
                continue
            }
            guard Date().timeIntervalSince(token.issuedAt) < SyncEngine.tokenLifetime else {
                try await write(
                    StreamFrame(
                        type: .reset, communityId: community, message: "The sync token is too old: run a full sync"))
                continue
            }
            asked[community] = snapshot
            order.append(community)
        }
        guard !asked.isEmpty || !tokenless.isEmpty else { return }
        let read = try await log.read(for: connection.userId, since: asked)
        for community in tokenless {
            try await write(
                read.memberOf.contains(community)
                    ? StreamFrame(type: .reset, communityId: community, message: "No sync token: run a full sync")
                    : Self.notFound(community))
        }
        for community in order {
            guard read.memberOf.contains(community) else {
                if positions.removeValue(forKey: community) != nil { hub.unfollow(community, by: connection) }
                try await write(Self.notFound(community))
                continue
            }
            guard !read.tooManyChanges.contains(community) else {
                // As a token too old: not followed until the client subscribes with a full sync's.
                if positions.removeValue(forKey: community) != nil { hub.unfollow(community, by: connection) }
                try await write(Self.tooManyChanges(in: community))
                continue
            }
            let token = read.token.text
            for frame in Self.frames(read.changes[community] ?? [], upTo: read.token) { try await write(frame) }
            if positions.updateValue(read.snapshot, forKey: community) == nil { hub.follow(community, by: connection) }
            try await write(StreamFrame(type: .subscribed, communityId: community, syncToken: token))
        }
        try await announceJoins(read, named: [], write: write)
    }

    private mutating func apply(_ batch: StreamBatch, afterGap: Bool, write: Write) async throws {
        guard let next = PostgresSnapshot(batch.next) else { return }
        let previous = batch.previous.flatMap(PostgresSnapshot.init)
        var fromLog = Set<UUID>()
        var joinsNamed = Set<UUID>()
        var inline: [UUID: [StreamBatch.Change]] = [:]
        var unreadChanged = false
        for change in batch.changes ?? [] {
            if change.kind == StreamBatch.unread {
                unreadChanged = unreadChanged || change.id == connection.userId
                continue
            }
            // The user's own join or removal (an update, a role or their profile, is a change
            // like any other: it is no join of a community the stream does not follow).
            if change.kind == "member" && change.id == connection.userId && change.operation != "update" {
                fromLog.insert(change.community)
                // A join the last read saw is known already (its batch can come after that read).
                if change.operation == "insert" && checked?.sees(change.txid) != true {
                    joinsNamed.insert(change.community)
                }
            }
            if positions[change.community] != nil { inline[change.community, default: []].append(change) }
        }
        for community in batch.communities ?? [] where positions[community] != nil { fromLog.insert(community) }
        for (community, position) in positions
        where StreamBatch.shard(of: community) == batch.shard && !fromLog.contains(community) {
            if position.includes(next) { continue }
            guard let previous, position.includes(previous) else {
                fromLog.insert(community)
                continue
            }
            for frame in Self.frames((inline[community] ?? []).filter { !position.sees($0.txid) }, upTo: batch.token) {
                try await write(frame)
            }
            positions[community] = next
        }
        // A publication was missed before this one: a join may have been in it, unless the
        // last read already saw everything up to where this batch starts (a new reader's first
        // batch starts nowhere: up to where it ends). One read covers every shard's gap.
        let joinMayBeMissed = afterGap && checked?.includes(previous ?? next) != true
        if !fromLog.isEmpty || joinMayBeMissed { try await catchUp(fromLog, joins: joinsNamed, write: write) }
        // A count is state, not a change: a hint lost with a Redis publication (a subscription
        // cut, Redis away) is made good by a fresh count when the gap shows, on the user's
        // shard, where the hints travel.
        let hintMayBeMissed = afterGap && batch.shard == StreamBatch.shard(of: connection.userId)
        if unreadChanged || hintMayBeMissed { self.unreadChanged() }
    }

    /// Reads `communities` from the log: for those followed, what changed since their
    /// positions (or their end, if the user left); then the joins it finds.
    private mutating func catchUp(_ communities: Set<UUID>, joins named: Set<UUID>, write: Write) async throws {
        let read = try await log.read(for: connection.userId, since: positions.filter { communities.contains($0.key) })
        for community in communities.sorted(by: { $0.uuidString < $1.uuidString }) where positions[community] != nil {
            if read.tooManyChanges.contains(community) {
                // Still followed from here: what changes after it comes as it commits, beside the
                // client's full sync (a change in both is applied twice, harmlessly).
                try await write(Self.tooManyChanges(in: community))
                positions[community] = read.snapshot
            } else if read.memberOf.contains(community) {
                for frame in Self.frames(read.changes[community] ?? [], upTo: read.token) { try await write(frame) }
                positions[community] = read.snapshot
            } else {
                positions[community] = nil
                hub.unfollow(community, by: connection)
                try await write(StreamFrame(type: .removed, communityId: community))
            }
        }
        try await announceJoins(read, named: named, write: write)
    }

    /// Follows and announces (`joined`) the communities the user is in by `read` that the
    /// stream does not follow and that are new since the last read, or whose join a batch
    /// named (a member who left and came back); then remembers `read`'s communities. A join
    /// the stream has no room for (``maxSubscriptions``) is not remembered, so a later read
    /// announces it once there is room.
    private mutating func announceJoins(_ read: StreamLog.Read, named: Set<UUID>, write: Write) async throws {
        let joined = read.memberOf.subtracting(known).union(named.intersection(read.memberOf))
        var unannounced = Set<UUID>()
        let token = read.token.text
        for community in joined.sorted(by: { $0.uuidString < $1.uuidString }) where positions[community] == nil {
            guard positions.count < maxSubscriptions else {
                unannounced.insert(community)
                continue
            }
            positions[community] = read.snapshot
            hub.follow(community, by: connection)
            try await write(StreamFrame(type: .joined, communityId: community, syncToken: token))
        }
        (known, checked) = (read.memberOf.subtracting(unannounced), read.snapshot)
        hasUnannouncedJoins = !unannounced.isEmpty
    }

    /// A community the caller is not in (or one deleted): nothing says whether it exists.
    static func notFound(_ community: UUID) -> StreamFrame {
        StreamFrame(type: .refused, communityId: community, code: "COMMUNITY_NOT_FOUND", message: "No such community")
    }

    /// More changed since the client's position than a stream sends one by one
    /// (``SyncEngine/mostChanges``), or a position this database has not reached: the client
    /// runs a full sync.
    static func tooManyChanges(in community: UUID) -> StreamFrame {
        StreamFrame(
            type: .reset, communityId: community,
            message: "The sync token is too far behind, or not this server's: run a full sync")
    }

    static func frame(_ change: StreamBatch.Change, token: String) -> StreamFrame {
        StreamFrame(
            type: .change, communityId: change.community, kind: change.kind, id: change.id,
            operation: change.operation, syncToken: token)
    }

    /// The frames of one community's `changes` (in log order, up to `token`), each with the
    /// token after it: `token` with the commits still to come left unseen
    /// (``PostgresSnapshot/hiding(_:most:)``), so a client that resumes from any frame's token
    /// misses none of them. (Every frame of a batch carried its end, and a client cut off in
    /// the middle lost the rest: a hostile probe's.) A commit's frames go together, the log's
    /// order kept between commits; all but its last carry the token before it, so resuming from
    /// one sends that commit's frames again.
    static func frames(_ changes: [StreamBatch.Change], upTo token: SyncToken) -> [StreamFrame] {
        guard changes.count > 1, let end = PostgresSnapshot(token.snapshot) else {
            return changes.map { frame($0, token: token.text) }
        }
        var commits: [UInt64] = []
        var byCommit: [UInt64: [StreamBatch.Change]] = [:]
        for change in changes {
            if byCommit[change.txid] == nil { commits.append(change.txid) }
            byCommit[change.txid, default: []].append(change)
        }
        func text(hiding unseen: Set<UInt64>) -> String {
            SyncToken(snapshot: end.hiding(unseen).text, issuedAt: token.issuedAt).text
        }
        var frames: [StreamFrame] = []
        var toCome = Set(commits)
        for commit in commits {
            let before = text(hiding: toCome)
            toCome.remove(commit)
            let after = text(hiding: toCome)
            let group = byCommit[commit] ?? []
            for (index, change) in group.enumerated() {
                frames.append(frame(change, token: index == group.count - 1 ? after : before))
            }
        }
        return frames
    }
}
