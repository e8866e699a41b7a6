import Foundation
import OrbitCoveClient
import Testing

/// What the app does, through the generated client, against the running stack; every answer
/// decoded into the generated types and checked value by value.
@Suite(.enabled(if: Stack.url != nil, Comment(rawValue: Stack.needed)))
struct AppFlowTests {
    @Test func signInCreateACommunityInviteAndJoin() async throws {
        let (ada, ben) = (try await Person.signIn("Ada"), try await Person.signIn("Ben"))
        let me = try await ada.client.getMe().ok.body.json.value2.data
        #expect(me.id == ada.id && me.displayName == "Ada" && me.avatarUrl == nil && me.deletionScheduledAt == nil)

        let club = try await ada.community()
        #expect(club.name == "Tigers U11" && club.description == nil && club.iconUrl == nil)
        #expect(club.role.value1 == .admin && club.memberCount == 1 && club.createdBy == ada.id)
        #expect(club.subscriptionStatus.value1 == .free && club.settings.timezone == "Europe/London")

        let invite = try await ada.client.createInvite(
            path: .init(communityId: club.id), body: .json(.init(maxUses: 5))
        )
        .created.body.json.value2.data
        #expect(invite.status.value1 == .active && invite.maxUses == 5 && invite.useCount == 0)
        #expect(invite.expiresAt == nil && invite.revokedAt == nil && invite.createdBy == ada.id)
        let joined = try await ben.client.joinByInviteCode(path: .init(code: invite.code)).created.body.json.value2.data
        #expect(joined.id == club.id && joined.role.value1 == .member && joined.memberCount == 2)

        let members = try await ada.client.listMembers(path: .init(communityId: club.id)).ok.body.json
        #expect(members.value2.data.map(\.userId).sorted() == [ada.id, ben.id].sorted())
        #expect(members.value2.data.first { $0.userId == ada.id }?.isCreator == true)
        #expect(members.value1.pagination.hasMore == false && members.value1.pagination.nextCursor == nil)
    }

    @Test func aRecurringEventAnsweredForADependantReadsBackInTheWindow() async throws {
        let ada = try await Person.signIn("Ada")
        let tommy = try await ada.client.createFamilyMember(body: .json(.init(name: "Tommy"))).created.body.json
            .value2.data
        let club = try await ada.community()
        let series = try await ada.client.createEvent(
            path: .init(communityId: club.id),
            body: .json(
                .init(
                    title: "Practice", startsAt: "2031-06-03T18:00:00+01:00", endsAt: "2031-06-03T19:30:00+01:00",
                    category: .practice, capacity: 10, recurrenceRule: "FREQ=WEEKLY;COUNT=3"))
        ).created.body.json.value2.data
        #expect(series.recurrenceRule == "FREQ=WEEKLY;COUNT=3" && series.recurrenceId == nil)
        #expect(series.category.value1 == .practice && series.capacity == 10 && series.timeZone == "Europe/London")
        // A write response carries no answer and no counts: null, decoded as nil.
        #expect(series.rsvp == nil && series.attendance == nil && series.dependantRsvps.isEmpty)

        let from = try #require(ISO8601DateFormatter().date(from: "2031-06-01T00:00:00Z"))
        let to = try #require(ISO8601DateFormatter().date(from: "2031-07-01T00:00:00Z"))
        func window() async throws -> [Components.Schemas.CalendarEvent] {
            try await ada.client.listEvents(path: .init(communityId: club.id), query: .init(from: from, to: to)).ok
                .body.json.value2.data
        }
        let before = try await window()
        #expect(before.count == 3 && before.allSatisfy { $0.id == series.id && $0.recurrenceId != nil })
        #expect(before.allSatisfy { $0.rsvp == nil && $0.attendance?.going == 0 && $0.attendance?.capacity == 10 })

        let (first, second) = (try #require(before.first?.recurrenceId), before[1].recurrenceId)
        let mine = try await ada.client.answerEvent(
            path: .init(communityId: club.id, eventId: series.id),
            body: .json(.init(status: .yes, plusOnes: 1, note: "Bringing cones", recurrenceId: first))
        ).ok.body.json.value2.data
        #expect(mine.status.value1 == .yes && mine.plusOnes == 1 && mine.familyMemberId == nil && !mine.waitlisted)
        let his = try await ada.client.answerEvent(
            path: .init(communityId: club.id, eventId: series.id),
            body: .json(.init(status: .yes, familyMemberId: tommy.id, recurrenceId: second))
        ).ok.body.json.value2.data
        #expect(his.familyMemberId == tommy.id && his.note == nil && his.plusOnes == 0)

        let after = try await window()
        #expect(after.count == 3)
        #expect(after[0].rsvp?.status.value1 == .yes && after[0].rsvp?.note == "Bringing cones")
        #expect(after[0].attendance?.going == 1 && after[0].attendance?.seats == 2 && after[0].dependantRsvps.isEmpty)
        // The dependant's answer is theirs: the caller's own answer to that instance is null.
        #expect(after[1].rsvp == nil && after[1].dependantRsvps.map(\.familyMemberId) == [tommy.id])
        #expect(after[1].attendance?.going == 1 && after[1].attendance?.seats == 1)
        #expect(after[2].rsvp == nil && after[2].attendance?.going == 0 && after[2].attendance?.declined == 0)
    }

    @Test func notificationsArePagedAndQuietHoursSetAndCleared() async throws {
        let ada = try await Person.signIn("Ada")
        let (red, blue) = (try await ada.community("Red"), try await ada.community("Blue"))
        // Each new community tells its creator it is ready; the notifications service writes it.
        let firstPage = try await eventually {
            let page = try await ada.client.listMyNotifications(query: .init(limit: 1)).ok.body.json
            return page.value1.pagination.hasMore ? page : nil
        }
        let first = try #require(firstPage.value2.data.first)
        let cursor = try #require(firstPage.value1.pagination.nextCursor)
        let rest = try await ada.client.listMyNotifications(query: .init(cursor: cursor, limit: 1)).ok.body.json
        let second = try #require(rest.value2.data.first)
        #expect(Set([first.communityId, second.communityId]) == [red.id, blue.id])
        #expect([first, second].allSatisfy { $0._type.value1 == .communityUpdate && $0.readAt == nil })
        #expect(first.data.communityId == first.communityId && first.createdAt >= second.createdAt)

        let preferences = ada.client.updateMyNotificationPreferences
        let quiet = try await preferences(
            .init(
                path: .init(communityId: red.id),
                body: .json(
                    .init(
                        quietHours: .init(
                            start: "22:00", end: "07:00", timeZone: "Europe/London", breakThrough: [.mentions]))
                ))
        ).ok.body.json.value2.data
        let hours = try #require(quiet.quietHours)
        #expect(hours.start == "22:00" && hours.end == "07:00" && hours.timeZone == "Europe/London")
        #expect(hours.breakThrough.map(\.value1) == [.mentions])
        #expect(quiet.push && quiet.categories.events && quiet.mutedEvents.isEmpty)

        // A generated client cannot send null: it names the field in `clear`.
        let cleared = try await preferences(
            .init(path: .init(communityId: red.id), body: .json(.init(clear: [.quietHours])))
        ).ok.body.json.value2.data
        #expect(cleared.quietHours == nil && cleared.push)
    }

    @Test func aFullSyncThenAnIncrementalOne() async throws {
        let (ada, ben) = (try await Person.signIn("Ada"), try await Person.signIn("Ben"))
        let club = try await ada.community()
        _ = try await ada.invite(ben, to: club)

        let full = try await ada.client.syncCommunity(path: .init(communityId: club.id)).ok.body.json.value2.data
        #expect(full.full && full.nextPage == nil && full.community?.id == club.id)
        #expect(full.members.created.map(\.userId).sorted() == [ada.id, ben.id].sorted())
        #expect(full.events.created.isEmpty && full.members.deleted.isEmpty && full.posts.created.isEmpty)

        let event = try await ada.client.createEvent(
            path: .init(communityId: club.id),
            body: .json(.init(title: "Match", startsAt: "2031-06-07T10:00:00+01:00", category: .game))
        ).created.body.json.value2.data
        let next = try await ada.client.syncCommunity(
            path: .init(communityId: club.id), query: .init(since: full.syncToken)
        ).ok.body.json.value2.data
        #expect(!next.full && next.community == nil && next.members.created.isEmpty && next.members.updated.isEmpty)
        let synced = try #require(next.events.created.first)
        #expect(next.events.created.count == 1 && synced.id == event.id && synced.category.value1 == .game)
        #expect(synced.endsAt == nil && synced.rsvp == nil && synced.attendance == nil && synced.capacity == nil)
        #expect(next.syncToken != full.syncToken)
    }

    @Test func aPollIsPostedVotedReactedToAndCommentedOnInTheFeed() async throws {
        let (ada, ben) = (try await Person.signIn("Ada"), try await Person.signIn("Ben"))
        let club = try await ada.community()
        _ = try await ada.invite(ben, to: club)
        let poll = try await ada.client.createPost(
            path: .init(communityId: club.id),
            body: .json(
                .init(
                    _type: .poll, content: "End of season party",
                    pollData: .init(question: "Which day?", options: ["Friday", "Saturday"], allowMultiple: false)))
        ).created.body.json.value2.data
        #expect(poll._type.value1 == .poll && poll.author.userId == ada.id && poll.myReaction == nil)
        #expect(poll.poll?.options.map(\.text) == ["Friday", "Saturday"] && poll.poll?.closesAt == nil)

        let voted = try await ben.client.voteInPoll(
            path: .init(communityId: club.id, postId: poll.id), body: .json(.init(optionIndexes: [1]))
        ).ok.body.json.value2.data
        #expect(
            voted.poll?.options.map(\.votes) == [0, 1] && voted.poll?.myVotes == [1] && voted.poll?.voterCount == 1)
        let reacted = try await ben.client.reactToPost(
            path: .init(communityId: club.id, postId: poll.id), body: .json(.init(_type: .celebrate))
        ).ok.body.json.value2.data
        #expect(reacted.reactionCounts.celebrate == 1 && reacted.myReaction == "celebrate")
        let comment = try await ben.client.createComment(
            path: .init(communityId: club.id, postId: poll.id), body: .json(.init(content: "Saturday!"))
        ).created.body.json.value2.data
        #expect(comment.parentId == nil && comment.author.displayName == "Ben")

        let feed = try await ada.client.listPosts(path: .init(communityId: club.id)).ok.body.json
        let read = try #require(feed.value2.data.first)
        #expect(feed.value2.data.count == 1 && read.id == poll.id && read.commentCount == 1)
        #expect(read.reactionCounts.celebrate == 1 && read.myReaction == nil && read.poll?.myVotes == [])
        let detail = try await ada.client.getPost(path: .init(communityId: club.id, postId: poll.id)).ok.body.json
            .value2.data
        #expect(detail.comments.map(\.id) == [comment.id] && detail.commentsNextCursor == nil)
    }

    @Test func clearingFieldsAsAGeneratedClientCan() async throws {
        let ada = try await Person.signIn("Ada")
        let set = try await ada.client.updateMe(body: .json(.init(avatarUrl: "https://x.test/ada.png"))).ok.body.json
            .value2.data
        #expect(set.avatarUrl == "https://x.test/ada.png")
        let cleared = try await ada.client.updateMe(body: .json(.init(clear: [.avatarUrl]))).ok.body.json.value2.data
        #expect(cleared.avatarUrl == nil && cleared.displayName == "Ada")

        let club = try await ada.community()
        let event = try await ada.client.createEvent(
            path: .init(communityId: club.id),
            body: .json(
                .init(title: "Practice", startsAt: "2031-06-03T18:00:00+01:00", endsAt: "2031-06-03T19:00:00+01:00"))
        ).created.body.json.value2.data
        #expect(event.endsAt != nil)
        let changed = try await ada.client.updateEvent(
            path: .init(communityId: club.id, eventId: event.id),
            body: .json(.init(title: "Training", clear: [.endsAt]))
        ).ok.body.json.value2.data
        #expect(changed.title == "Training" && changed.endsAt == nil)
    }

    @Test func anExpiredAccessTokenIsRefreshedOnce() async throws {
        let ada = try await Person.signIn("Ada")
        let real = try #require(await ada.session.tokens)
        // An access token the API refuses (401), with the real refresh token beside it.
        await ada.session.signIn(.init(accessToken: "expired.\(real.accessToken)", refreshToken: real.refreshToken))
        async let one = ada.client.getMe().ok.body.json.value2.data
        async let two = ada.client.getMe().ok.body.json.value2.data
        let (first, second) = try await (one, two)
        #expect(first.id == ada.id && second.id == ada.id)
        let fresh = try #require(await ada.session.tokens)
        #expect(fresh.refreshToken != real.refreshToken && fresh.accessToken != real.accessToken)

        // A refresh token that is refused ends the session; the 401 comes back to the app.
        await ada.session.signIn(
            .init(accessToken: "expired", refreshToken: "ocr_" + String(repeating: "A", count: 43)))
        let refused = try await ada.client.getMe()
        guard case .unauthorized = refused else {
            Issue.record("expected 401, got \(refused)")
            return
        }
        #expect(await ada.session.tokens == nil)
    }
}
