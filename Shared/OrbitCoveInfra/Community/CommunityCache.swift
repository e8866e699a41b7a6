import Crypto
import Foundation
import Logging
import OrbitCoveModels
import Synchronization

/// Cache-aside in Redis for what nearly every request reads: a community's row, whether (and
/// as what) a user belongs to it, and the first page of its members.
///
/// Every entry of a community lives under its current generation. A change to the community
/// or its membership bumps the generation after its transaction commits and before its
/// response leaves, so nobody reads the old entries again: a removed member or a deleted
/// community loses access at once. A reader that loaded rows before such a change and
/// stores them afterwards stores them under the old generation, where nobody looks, so the
/// race that plain "delete the key" invalidation has cannot serve stale rows. Redis being
/// down only costs database reads.
///
/// When Redis fails, requests carry on from PostgreSQL. A read that could not learn the
/// generation stores nothing, and an invalidation that could not reach Redis is remembered
/// and retried: until it lands, this process reads that community past the cache, so a
/// change made during an outage is not undone by old entries when Redis comes back.
package struct CommunityCache: Sendable {
    package let redis: RedisClient
    package let ttlSeconds: Int
    package let logger: Logger
    private let pending = PendingInvalidations()
    private let records = DecodedTexts<CommunityRecord>()
    private let memberships = DecodedTexts<CachedMembership>()
    /// Settings as the gate reads them from PostgreSQL on a miss: they change rarely and most
    /// communities share the defaults, and `JSONDecoder` on them was 2–3 % of core's CPU on
    /// uncached reads (BENCHMARKS.md, "The hot read path", 2026-12-01).
    package let settingsTexts = DecodedTexts<CommunitySettings>(capacity: 256)

    package init(redis: RedisClient, ttlSeconds: Int, logger: Logger) {
        self.redis = redis
        self.ttlSeconds = ttlSeconds
        self.logger = logger
    }

    /// A membership as cached: the role, or `nil` for "not a member" (cached too, so probing
    /// a community one does not belong to does not reach the database every time).
    package struct CachedMembership: Codable, Sendable, Equatable {
        package var role: MemberRole?

        package init(role: MemberRole?) { self.role = role }
    }

    /// What the cache holds for one community and user, read in one round trip.
    package struct Snapshot: Sendable {
        /// `nil` when the cache could not be read: then nothing read from the database is stored.
        package var generation: String?
        package var record: CommunityRecord?
        package var membership: CachedMembership?
        package var membersPage: EncodedPage?
    }

    /// The generation, then the entries under it (community, membership, a members page).
    /// The entries' keys derive from the generation, so the script names them itself.
    package static let lookupScript = RedisScript(
        """
        local generation = redis.call('GET', KEYS[1]) or '0'
        local base = ARGV[1] .. generation
        local page = false
        if ARGV[3] ~= '' then page = redis.call('GET', base .. ARGV[3]) end
        return {generation, redis.call('GET', base .. ':community'), redis.call('GET', base .. ':member:' .. ARGV[2]), page}
        """)

    package static let invalidateScript = RedisScript(
        """
        local generation = redis.call('INCR', KEYS[1])
        redis.call('EXPIRE', KEYS[1], ARGV[1])
        return generation
        """)

    package func lookup(_ communityId: UUID, _ userId: UUID, membersPageLimit: Int? = nil) async -> Snapshot {
        // A lifetime of 0 turns the cache off: every read goes to PostgreSQL (and, with no
        // generation, nothing is stored). Writes still retire other instances' entries.
        guard ttlSeconds > 0 else { return Snapshot() }
        if pending.contains(communityId) {
            await invalidate(communityId)
            if pending.contains(communityId) { return Snapshot() }
        }
        do {
            let reply = try await redis.evaluate(
                Self.lookupScript, keys: [Self.generationKey(communityId)],
                arguments: [
                    Self.prefix(communityId), Self.id(userId),
                    membersPageLimit.map { Self.membersPageSuffix(limit: $0) } ?? "",
                ])
            guard case .array(let values) = reply, values.count == 4, let generation = values[0].string else {
                return Snapshot()
            }
            return Snapshot(
                generation: generation, record: values[1].string.flatMap(records.value(of:)),
                membership: values[2].string.flatMap(memberships.value(of:)),
                membersPage: values[3].string.flatMap(EncodedPage.init(stored:)))
        } catch {
            logger.debug("cache read failed", metadata: ["error": .string("\(error)")])
            return Snapshot()
        }
    }

    package func store(_ record: CommunityRecord, generation: String?) async {
        guard let generation else { return }
        await write(record, to: Self.prefix(record.id) + generation + ":community")
    }

    package func store(_ membership: CachedMembership, _ communityId: UUID, _ userId: UUID, generation: String?) async {
        guard let generation else { return }
        await write(membership, to: Self.prefix(communityId) + generation + ":member:" + Self.id(userId))
    }

    /// The first members page, as written for the response (``EncodedPage/stored``), kept under
    /// the number of rows asked for (the page's size plus one).
    package func storeMembersPage(_ page: EncodedPage, _ communityId: UUID, limit: Int, generation: String?) async {
        guard let generation else { return }
        await write(text: page.stored, to: Self.membersPageKey(communityId, generation: generation, limit: limit))
    }

    /// Where the first members page of `limit` rows is kept under `generation`.
    package static func membersPageKey(_ communityId: UUID, generation: String, limit: Int) -> String {
        prefix(communityId) + generation + membersPageSuffix(limit: limit)
    }

    static func membersPageSuffix(limit: Int) -> String { ":members-page:\(membersPageFormat):\(limit)" }

    /// The shape of a cached members page: a digest of the fields a member is written with.
    /// The page is kept as the JSON it was answered with, so after a deploy that changes
    /// `CommunityMember`'s fields each version reads only the pages it wrote itself (old and
    /// new replicas side by side included), never the other's shape.
    package static let membersPageFormat: String = {
        let sample = CommunityMember(
            userId: UUID(), displayName: "", avatarUrl: "", nickname: "", role: .member, isCreator: false,
            joinedAt: Date(timeIntervalSince1970: 0))
        guard let bytes = try? JSONCoding.encoder.encodeBytes(sample),
            case .object(let fields) = try? JSONCoding.decoder.decode(JSONValue.self, from: Data(bytes))
        else { return "v" }
        return String(SHA256.hexDigest(of: fields.keys.sorted().joined(separator: ",")).prefix(12))
    }()

    /// Retires every entry of `communityId`. The generation outlives the entries (twice their
    /// lifetime), so it cannot fall back to a number whose entries still exist.
    package func invalidate(_ communityId: UUID) async {
        do {
            _ = try await redis.evaluate(
                Self.invalidateScript, keys: [Self.generationKey(communityId)],
                arguments: [String(2 * ttlSeconds + 60)])
            pending.remove(communityId)
        } catch {
            // Entries would outlive the change: remembered and retried (see the type's note);
            // other replicas' entries expire within ttlSeconds, and row-level security refuses
            // the rows meanwhile.
            pending.insert(communityId)
            // While the circuit is open every write lands here: the breaker said so once.
            let level: Logger.Level = (error as? RedisError)?.isCircuitOpen == true ? .debug : .error
            logger.log(
                level: level, "cache invalidation failed; will retry",
                metadata: ["communityId": .string(Self.id(communityId)), "error": .string("\(error)")])
        }
    }

    /// Tries again every invalidation that could not reach Redis (``ServiceKit`` runs this every
    /// few seconds), so once Redis is back no replica reads entries a change should have retired.
    package func retryPendingInvalidations() async {
        for communityId in pending.all { await invalidate(communityId) }
    }

    package static func id(_ uuid: UUID) -> String { uuid.lowercasedString }
    package static func prefix(_ communityId: UUID) -> String { "core:community:\(id(communityId)):" }
    package static func generationKey(_ communityId: UUID) -> String { prefix(communityId) + "generation" }

    private func write(_ value: some Encodable, to key: String) async {
        do {
            await write(text: String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self), to: key)
        } catch {
            logger.debug("cache write failed", metadata: ["key": .string(key), "error": .string("\(error)")])
        }
    }

    private func write(text: String, to key: String) async {
        do {
            try await redis.set(key, text, expiresIn: ttlSeconds)
        } catch {
            logger.debug("cache write failed", metadata: ["key": .string(key), "error": .string("\(error)")])
        }
    }
}

/// Values decoded from the cache's JSON, remembered by their exact text. A community's record
/// is read from Redis on nearly every request and changes rarely, and decoding it with
/// `JSONDecoder` each time was an eighth of core's CPU on cached reads (BENCHMARKS.md, "The hot
/// read path"). The same text always decodes to the same value, so remembering it changes
/// nothing but the cost; a changed community is stored as a new text. Bounded: when full, it
/// starts afresh.
package final class DecodedTexts<Value: Decodable & Sendable>: Sendable {
    package let capacity: Int
    private let values = Mutex<[String: Value]>([:])

    /// A record's text is a few kilobytes at most (a description of 2,000 characters): a
    /// thousand, with their decoded copies, stay under 20 MB.
    package init(capacity: Int = 1024) { self.capacity = capacity }

    /// The value `text` decodes to, or `nil` if it is not one (a miss, as before).
    package func value(of text: String) -> Value? {
        if let known = values.withLock({ $0[text] }) { return known }
        guard let decoded = try? JSONCoding.decoder.decode(Value.self, from: Data(text.utf8)) else { return nil }
        values.withLock { values in
            if values.count >= capacity { values.removeAll(keepingCapacity: true) }
            values[text] = decoded
        }
        return decoded
    }

    package var count: Int { values.withLock { $0.count } }
}

/// Communities whose invalidation has not reached Redis yet.
private final class PendingInvalidations: Sendable {
    private let ids = Mutex<Set<UUID>>([])
    /// A fast path: nearly always nothing is pending, and then no lock is taken.
    private let count = Atomic<Int>(0)

    var all: [UUID] {
        count.load(ordering: .relaxed) > 0 ? ids.withLock { Array($0) } : []
    }

    package func contains(_ id: UUID) -> Bool {
        count.load(ordering: .relaxed) > 0 && ids.withLock { $0.contains(id) }
    }

    package func insert(_ id: UUID) {
        ids.withLock { ids in
            if ids.insert(id).inserted { count.add(1, ordering: .relaxed) }
        }
    }

    package func remove(_ id: UUID) {
        guard count.load(ordering: .relaxed) > 0 else { return }
        ids.withLock { ids in
            if ids.remove(id) != nil { count.subtract(1, ordering: .relaxed) }
        }
    }
}
