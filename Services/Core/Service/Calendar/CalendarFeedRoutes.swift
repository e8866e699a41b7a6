import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/me/calendar-feeds` (make, list and revoke feed addresses) and the feed itself,
/// `GET /api/v1/calendar/{token}.ics`, which calendar apps poll without a bearer token.
struct CalendarFeedRoutes {
    let feeds: CalendarFeedStore
    let gate: CommunityGate
    let limiter: RateLimiter
    /// Fetches per feed: calendar apps poll every quarter of an hour or so.
    let fetchLimit: RateLimit

    func register(on router: Router<AppRequestContext>) {
        router.post("/api/v1/me/calendar-feeds") { request, context in
            let user = try context.requireUser()
            var reader = try await FieldReader.read(request, context: context, allowed: ["communityId"])
            var community: UUID?
            switch reader.fields["communityId"] {
            case nil, .null: break
            case .string(let text) where UUID(uuidString: text) != nil: community = UUID(uuidString: text)
            default: reader.problems["communityId"] = "must be a community id, or null for all your communities"
            }
            try reader.check()
            if let community { _ = try await gate.require(.viewContent, in: community, by: user) }
            let feed: CalendarFeed
            do {
                feed = try await feeds.create(for: user, community: community)
            } catch {
                // The wall refuses a feed of a community the caller left meanwhile.
                guard let community else { throw error }
                try await gate.rethrow(error, ofAWriteIn: community, by: user)
            }
            return try Response.data(
                feed, status: .created, requestId: context.requestId,
                headers: [
                    .location: "/api/v1/me/calendar-feeds/\(feed.id.lowercasedString)",
                    // The address is a secret: no cache (and no idempotency replay) keeps it.
                    .cacheControl: "no-store",
                ])
        }

        router.get("/api/v1/me/calendar-feeds") { _, context in
            try Response.data(try await feeds.feeds(of: try context.requireUser()), requestId: context.requestId)
        }

        router.delete("/api/v1/me/calendar-feeds/:feedId") { _, context in
            let user = try context.requireUser()
            guard let feed = context.parameters.get("feedId", as: UUID.self) else { throw CalendarFeedStore.notFound }
            try await feeds.revoke(feed, of: user)
            return Response(status: .noContent)
        }

        router.get("/api/v1/calendar/:feed") { request, context in
            guard let name = context.parameters.get("feed"), name.hasSuffix(".ics") else {
                throw CalendarFeedStore.notFound
            }
            let token = String(name.dropLast(4))
            guard token.utf8.count == 64, token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { throw CalendarFeedStore.notFound }
            try await limiter.enforce(fetchLimit, client: "feed:\(token.prefix(16))")
            let owner = try await feeds.owner(of: token)
            return try await Self.feed(feeds, user: owner.user, community: owner.community, request: request)
        }
    }

    /// An entity tag without its weak mark: `If-None-Match` compares weakly (RFC 9110), and
    /// the gateway marks the tag weak when it compresses the feed.
    static func opaqueTag(_ tag: Substring) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }

    /// The feed as `text/calendar`, or `304` when the client's `If-None-Match` is current.
    static func feed(
        _ feeds: CalendarFeedStore, user: UUID, community: UUID?, request: Request
    ) async throws
        -> Response
    {
        let version = try await feeds.version(for: user, community: community)
        var headers: HTTPFields = [.eTag: version, .cacheControl: "private, max-age=300"]
        if let match = request.headers[.ifNoneMatch],
            match.trimmingCharacters(in: .whitespaces) == "*"
                || match.split(separator: ",").contains(where: { Self.opaqueTag($0) == version })
        {
            return Response(status: .notModified, headers: headers)
        }
        let text = try await feeds.calendar(for: user, community: community)
        headers[.contentType] = "text/calendar; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
