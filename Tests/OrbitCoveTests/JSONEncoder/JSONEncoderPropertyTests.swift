import Foundation
import OrbitCoveModels
import PropertyBased
import Testing

@testable import AuthService
@testable import NotificationsService
@testable import OrbitCoveInfra

/// The proof that `JSONCoding.encoder` may stand in for `JSONEncoder`: random values of every
/// type the API and the queues write, through both (see `ReferenceComparison`). A failure names
/// its seed (`.fixedSeed(...)` replays it); each defect found is also kept as a plain test in
/// `JSONEncodingTests`.
@Suite struct JSONEncoderPropertyTests {
    /// Values per response type and run: 44 types, 55 comparisons (a message alone and in its
    /// envelope), 5,410 top-level values a run, most holding dozens of strings, numbers, dates and ids.
    static let casesPerType = 100
    /// JSON nested past JSONEncoder's limit of 512 is slow to parse back (the tree comparison's
    /// decoder), and a few cases find the boundary.
    static let deepCases = 10

    enum ResponseType: String, CaseIterable, CustomTestStringConvertible {
        case community, communityPage, member, memberPage, familyMembers, auditPage, invite, invitePage, invitePreview
        case user, session, signingKeys
        case event, eventWindow, eventPage, rsvp, attendance, calendarFeeds
        case notificationPage, notificationPreferences, devices, unreadCount, markedRead, pushPayload
        case communitySync, syncResponse
        case errorEnvelope, readiness, json
        case communityCreated, memberJoined, memberLeft, memberRemoved, memberRoleChanged, communityUpdated
        case eventCreated, eventUpdated, eventRSVPChanged, eventWaitlistPromoted, pushDue
        case membershipCache, encoderCorners, deepNesting, nonFiniteNumbers

        var testDescription: String { rawValue }
    }

    @Test(arguments: ResponseType.allCases)
    func ourEncoderWritesWhatJSONEncoderWrites(_ type: ResponseType) async {
        switch type {
        case .community: await check { DataEnvelope(data: $0.community(), meta: $0.meta()) }
        case .communityPage: await check { $0.page { $0.community() } }
        case .member: await check { DataEnvelope(data: $0.member(), meta: $0.meta()) }
        case .memberPage: await check { $0.page { $0.member() } }
        case .familyMembers: await check { DataEnvelope(data: $0.list(0...4) { $0.familyMember() }, meta: $0.meta()) }
        case .auditPage: await check { $0.page { $0.auditEntry() } }
        case .invite: await check { DataEnvelope(data: $0.invite(), meta: $0.meta()) }
        case .invitePage: await check { $0.page { $0.invite() } }
        case .invitePreview: await check { DataEnvelope(data: $0.invitePreview(), meta: $0.meta()) }
        case .user: await check { DataEnvelope(data: $0.user(), meta: $0.meta()) }
        case .session: await check { DataEnvelope(data: $0.session(), meta: $0.meta()) }
        case .signingKeys: await check { $0.keySet() }
        case .event: await check { DataEnvelope(data: $0.event(), meta: $0.meta()) }
        case .eventWindow: await check { DataEnvelope(data: $0.list(0...12) { $0.event() }, meta: $0.meta()) }
        case .eventPage: await check { $0.page { $0.event() } }
        case .rsvp: await check { DataEnvelope(data: $0.rsvp(), meta: $0.meta()) }
        case .attendance: await check { DataEnvelope(data: $0.attendance(), meta: $0.meta()) }
        case .calendarFeeds: await check { DataEnvelope(data: $0.list(0...3) { $0.calendarFeed() }, meta: $0.meta()) }
        case .notificationPage: await check { $0.page { $0.notificationRecord() } }
        case .notificationPreferences: await check { DataEnvelope(data: $0.preferences(), meta: $0.meta()) }
        case .devices: await check { DataEnvelope(data: $0.list(0...3) { $0.device() }, meta: $0.meta()) }
        case .unreadCount: await check { DataEnvelope(data: UnreadCount(count: $0.integer()), meta: $0.meta()) }
        case .markedRead: await check { DataEnvelope(data: MarkedRead(marked: $0.integer()), meta: $0.meta()) }
        case .pushPayload: await check { $0.pushPayload() }
        case .communitySync: await check { DataEnvelope(data: $0.communitySync(), meta: $0.meta()) }
        case .syncResponse: await check { DataEnvelope(data: $0.syncResponse(), meta: $0.meta()) }
        case .errorEnvelope:
            await check {
                ErrorEnvelope(
                    code: $0.pick(["VALIDATION_FAILED", "X"]), message: $0.string(), details: $0.jsonObject())
            }
        case .readiness:
            await check {
                ReadinessReport(
                    status: $0.text(),
                    checks: Dictionary($0.list(0...4) { ($0.key(), $0.string()) }, uniquingKeysWith: { a, _ in a }))
            }
        case .json: await check { $0.json(depth: 6) }
        case .communityCreated:
            await checkMessage { CommunityCreated(communityId: $0.uuid(), name: $0.text(), createdBy: $0.uuid()) }
        case .memberJoined:
            await checkMessage {
                MemberJoined(
                    communityId: $0.uuid(), communityName: $0.text(), userId: $0.uuid(), displayName: $0.text())
            }
        case .memberLeft:
            await checkMessage {
                MemberLeft(communityId: $0.uuid(), communityName: $0.text(), userId: $0.uuid(), displayName: $0.text())
            }
        case .memberRemoved:
            await checkMessage {
                MemberRemoved(communityId: $0.uuid(), communityName: $0.text(), userId: $0.uuid(), removedBy: $0.uuid())
            }
        case .memberRoleChanged:
            await checkMessage {
                MemberRoleChanged(
                    communityId: $0.uuid(), communityName: $0.text(), userId: $0.uuid(), role: $0.pick(MemberRole.self),
                    changedBy: $0.uuid())
            }
        case .communityUpdated:
            await checkMessage {
                CommunityUpdated(
                    communityId: $0.uuid(), name: $0.text(), changes: $0.list(0...3) { $0.key() }, updatedBy: $0.uuid())
            }
        case .eventCreated:
            await checkMessage {
                EventCreated(
                    communityId: $0.uuid(), communityName: $0.text(), event: $0.eventSummary(),
                    rsvpRequested: $0.chance(0.5))
            }
        case .eventUpdated:
            await checkMessage {
                EventUpdated(
                    communityId: $0.uuid(), communityName: $0.text(), event: $0.eventSummary(),
                    scope: $0.maybe { $0.pick(EditScope.self) }, changes: $0.list(0...3) { $0.key() },
                    updatedBy: $0.uuid(),
                    answeredUserIds: $0.list(0...4) { $0.uuid() })
            }
        case .eventRSVPChanged:
            await checkMessage {
                EventRSVPChanged(
                    communityId: $0.uuid(), event: $0.eventSummary(), userId: $0.uuid(),
                    familyMemberId: $0.maybe { $0.uuid() },
                    status: $0.pick(RSVPStatus.self), previousStatus: $0.maybe { $0.pick(RSVPStatus.self) },
                    waitlisted: $0.chance(0.5))
            }
        case .eventWaitlistPromoted:
            await checkMessage {
                EventWaitlistPromoted(
                    communityId: $0.uuid(), communityName: $0.text(), event: $0.eventSummary(), userId: $0.uuid(),
                    familyMemberId: $0.maybe { $0.uuid() })
            }
        case .pushDue: await checkMessage { PushDue(notificationIds: $0.list(0...5) { $0.uuid() }) }
        case .membershipCache:
            await check {
                Membership(role: $0.pick(MemberRole.self), isCreator: $0.chance(0.5), creatorIsAdmin: $0.chance(0.5))
            }
        case .encoderCorners: await check { EncoderCorners(&$0) }
        case .deepNesting: await check(count: Self.deepCases) { $0.nested(depth: $0.int(in: 505...520)) }
        case .nonFiniteNumbers: await check { $0.withNonFiniteNumber() }
        }
    }

    /// Runs the comparison on `count` values from `make`.
    private func check<Value: Encodable & Sendable>(
        count: Int = casesPerType, _ make: @escaping @Sendable (inout Draw) -> Value,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await propertyCheck(
            count: count, input: Draw.cases(make),
            perform: { ReferenceComparison.expectSame($0.value, ids: $0.ids, sourceLocation: sourceLocation) },
            sourceLocation: sourceLocation)
    }

    /// A message's payload as the outbox stores it, and in its envelope as a consumer reads it.
    private func checkMessage<Payload: MessagePayload>(
        _ make: @escaping @Sendable (inout Draw) -> Payload, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await check(make, sourceLocation: sourceLocation)
        await check(
            {
                MessageEnvelope(
                    id: $0.uuid(), occurredAt: $0.date(), communityId: $0.maybe { $0.uuid() },
                    actorId: $0.maybe { $0.uuid() }, data: make(&$0))
            }, sourceLocation: sourceLocation)
    }
}
