import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/communities/{id}/posts`: the feed, a post and its comments, reactions, poll votes
/// and pins.
struct FeedRoutes {
    let store: PostStore
    let writer: PostWriter

    /// Comments that come with a post (`GET …/posts/{postId}`).
    static let firstComments = 20

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("posts") { request, context in
            let granted = try context.member(.viewContent)
            if let text = request.uri.queryParameters.get("q") {
                let typed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                guard (1...200).contains(typed.databaseLength), !typed.unicodeScalars.contains("\u{0}") else {
                    throw APIError.validation(["q": "must be 1 to 200 characters, none of them NUL"])
                }
                let page = try PostStore.SearchPage(request, text: typed)
                let found = try await store.search(typed, in: granted.communityId, viewer: granted.userId, page: page)
                return try Response.json(
                    ListEnvelope(
                        data: found.posts, meta: ResponseMeta(requestId: context.requestId),
                        pagination: CursorPagination(
                            nextCursor: found.next, hasMore: found.next != nil, limit: page.limit)))
            }
            let page = try PageRequest(request)
            let feed = try await store.feed(of: granted.communityId, viewer: granted.userId, page: page)
            let items = feed.page.prefix(page.limit)
            let hasMore = feed.page.count > page.limit
            return try Response.json(
                ListEnvelope(
                    data: feed.pinned + items.map(\.0), meta: ResponseMeta(requestId: context.requestId),
                    pagination: CursorPagination(
                        nextCursor: hasMore ? items.last?.1.token : nil, hasMore: hasMore, limit: page.limit)))
        }

        community.post("posts") { request, context in
            let input = try await PostInput.read(request, context: context, creating: true)
            let granted = try context.member(input.type == .announcement ? .createAnnouncement : .createPost)
            let post = try await MediaReferences.refusing {
                try await writer.create(input, in: granted, request: RequestFacts(request, context))
            }
            return try Response.data(
                post, status: .created, requestId: context.requestId,
                headers: [
                    .location:
                        "/api/v1/communities/\(granted.communityId.lowercasedString)/posts/\(post.id.lowercasedString)"
                ])
        }

        community.get("posts/:postId") { _, context in
            let granted = try context.member(.viewContent)
            let detail = try await store.post(
                try context.postId(), in: granted.communityId, viewer: granted.userId, commentsLimit: Self.firstComments
            )
            return try Response.data(detail, requestId: context.requestId)
        }

        community.patch("posts/:postId") { request, context in
            let granted = try context.member(.viewContent)
            let input = try await PostInput.read(request, context: context, creating: false)
            let postId = try context.postId()
            let post = try await MediaReferences.refusing {
                try await writer.edit(postId, input, in: granted, request: RequestFacts(request, context))
            }
            return try Response.data(post, requestId: context.requestId)
        }

        community.delete("posts/:postId") { request, context in
            let granted = try context.member(.viewContent)
            try await writer.delete(try context.postId(), in: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.post("posts/:postId/pin") { request, context in
            let granted = try context.member(.pinPost)
            let until = try await Self.pinnedUntil(request, context: context)
            let post = try await writer.pin(
                try context.postId(), until: until, in: granted, request: RequestFacts(request, context))
            return try Response.data(post, requestId: context.requestId)
        }

        community.delete("posts/:postId/pin") { request, context in
            let granted = try context.member(.pinPost)
            let post = try await writer.unpin(
                try context.postId(), in: granted, request: RequestFacts(request, context))
            return try Response.data(post, requestId: context.requestId)
        }

        community.post("posts/:postId/reactions") { request, context in
            let granted = try context.member(.viewContent)
            var reader = try await FieldReader.read(request, context: context, allowed: ["type"], nullClears: false)
            let type = reader.choice("type", as: ReactionType.self).value
            if type == nil, reader.problems["type"] == nil { reader.problems["type"] = "is required" }
            try reader.check()
            let summary = try await writer.react(
                type, to: try context.postId(), in: granted, request: RequestFacts(request, context))
            return try Response.data(summary, requestId: context.requestId)
        }

        community.delete("posts/:postId/reactions") { request, context in
            let granted = try context.member(.viewContent)
            let summary = try await writer.react(
                nil, to: try context.postId(), in: granted, request: RequestFacts(request, context))
            return try Response.data(summary, requestId: context.requestId)
        }

        community.post("posts/:postId/votes") { request, context in
            let granted = try context.member(.viewContent)
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["optionIndexes"], nullClears: false)
            let options = Self.optionIndexes(&reader)
            try reader.check()
            let post = try await writer.vote(
                options, in: try context.postId(), granted: granted, request: RequestFacts(request, context))
            return try Response.data(post, requestId: context.requestId)
        }

        community.delete("posts/:postId/votes") { request, context in
            let granted = try context.member(.viewContent)
            let post = try await writer.vote(
                nil, in: try context.postId(), granted: granted, request: RequestFacts(request, context))
            return try Response.data(post, requestId: context.requestId)
        }

        community.get("posts/:postId/comments") { request, context in
            let granted = try context.member(.viewContent)
            let page = try PageRequest(request)
            let comments = try await store.comments(
                of: try context.postId(), in: granted.communityId, viewer: granted.userId, page: page)
            return try Response.page(comments, of: page, requestId: context.requestId)
        }

        community.post("posts/:postId/comments") { request, context in
            let granted = try context.member(.viewContent)
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["content", "parentId", "mentions"], nullClears: false)
            let content = reader.text("content", maxLength: FeedLimits.commentLength, required: true).value
            let parentId = reader.id("parentId").value
            let mentions = reader.ids("mentions", maxCount: FeedLimits.mentions) ?? []
            try reader.check()
            let comment = try await writer.comment(
                on: try context.postId(), content: content ?? "", parentId: parentId, mentions: mentions,
                granted: granted, request: RequestFacts(request, context))
            return try Response.data(comment, status: .created, requestId: context.requestId)
        }

        community.patch("posts/:postId/comments/:commentId") { request, context in
            let granted = try context.member(.viewContent)
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["content", "mentions"], nullClears: false)
            let content = reader.text("content", maxLength: FeedLimits.commentLength)
            if case .clear = content { reader.problems["content"] = "must not be empty" }
            let mentions = reader.ids("mentions", maxCount: FeedLimits.mentions)
            try reader.check()
            let comment = try await writer.editComment(
                try context.commentId(), on: try context.postId(), content: content.value, mentions: mentions,
                granted: granted, request: RequestFacts(request, context))
            return try Response.data(comment, requestId: context.requestId)
        }

        community.delete("posts/:postId/comments/:commentId") { request, context in
            let granted = try context.member(.viewContent)
            try await writer.deleteComment(
                try context.commentId(), on: try context.postId(), granted: granted,
                request: RequestFacts(request, context))
            return Response(status: .noContent)
        }
    }

    /// `{"pinnedUntil": …}`, optional (an empty body pins until unpinned), in the future.
    static func pinnedUntil(_ request: Request, context: some RequestContext) async throws -> Date? {
        guard request.headers[.contentLength].map({ $0 != "0" }) ?? (request.headers[.transferEncoding] != nil) else {
            return nil
        }
        var reader = try await FieldReader.read(request, context: context, allowed: ["pinnedUntil"], nullClears: false)
        let until = reader.instant("pinnedUntil").value
        if let until, until <= Date() { reader.problems["pinnedUntil"] = "must be in the future" }
        try reader.check()
        return until
    }

    /// The poll options chosen: a list of distinct option indexes, at least one.
    static func optionIndexes(_ reader: inout FieldReader) -> [Int]? {
        guard case .array(let items) = reader.fields["optionIndexes"], !items.isEmpty,
            items.count <= FeedLimits.pollOptions.upperBound
        else {
            reader.problems["optionIndexes"] =
                "must be a list of 1 to \(FeedLimits.pollOptions.upperBound) option indexes (DELETE …/votes withdraws)"
            return nil
        }
        var indexes: [Int] = []
        for item in items {
            guard case .number(let value) = item, value.rounded() == value, (0...19).contains(value) else {
                reader.problems["optionIndexes"] = "must hold whole numbers from 0 to 19"
                return nil
            }
            if !indexes.contains(Int(value)) { indexes.append(Int(value)) }
        }
        return indexes.sorted()
    }
}

extension CommunityRequestContext {
    func postId() throws -> UUID {
        guard let id = parameters.get("postId", as: UUID.self) else { throw FeedErrors.postNotFound }
        return id
    }

    func commentId() throws -> UUID {
        guard let id = parameters.get("commentId", as: UUID.self) else { throw FeedErrors.commentNotFound }
        return id
    }
}
