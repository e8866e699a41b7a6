import Foundation
import OrbitCoveModels

/// Random values of the models the API writes, every optional field nil or set, every string,
/// number and date drawn from the awkward ranges in `Draw`.
extension Draw {
    mutating func meta() -> ResponseMeta {
        ResponseMeta(
            timestamp: date(), requestId: maybe { $0.chance(0.8) ? $0.uuidLookalike().lowercased() : $0.string() })
    }

    mutating func pagination() -> CursorPagination {
        CursorPagination(nextCursor: maybe { $0.string(upTo: 40) }, hasMore: chance(0.5), limit: integer())
    }

    mutating func settings() -> CommunitySettings {
        CommunitySettings(
            allowMemberEvents: chance(0.5), allowMemberPosts: chance(0.5), defaultReminderHours: integer(),
            timezone: pick(["UTC", "Europe/London", "America/St_Johns", "Asia/Kathmandu"]))
    }

    mutating func community() -> Community {
        Community(
            id: uuid(), name: text(), description: maybe { $0.string(upTo: 80) }, iconUrl: maybe { $0.url() },
            createdBy: uuid(), memberCount: integer(), subscriptionStatus: pick(SubscriptionStatus.self),
            settings: settings(), role: pick(MemberRole.self), createdAt: date(), updatedAt: date())
    }

    mutating func url() -> String {
        "https://media.example/\(uuid().lowercasedString)/" + string(upTo: 8) + (chance(0.5) ? "?a=1&b=/x" : "")
    }

    mutating func member() -> CommunityMember {
        CommunityMember(
            userId: uuid(), displayName: text(), avatarUrl: maybe { $0.url() }, nickname: maybe { $0.text() },
            role: pick(MemberRole.self), isCreator: chance(0.1), joinedAt: date())
    }

    mutating func familyMember() -> FamilyMember {
        FamilyMember(id: uuid(), name: text(), avatarUrl: maybe { $0.url() }, createdAt: date())
    }

    mutating func auditEntry() -> AuditEntry {
        AuditEntry(
            id: uuid(), action: pick(["member.role_changed", "event.deleted"]) + string(upTo: 2), actorId: uuid(),
            targetType: maybe { $0.text() }, targetId: maybe { $0.uuid() }, metadata: jsonObject(), createdAt: date())
    }

    mutating func invite() -> Invite {
        Invite(
            id: uuid(), code: string(upTo: 10), createdBy: uuid(), maxUses: maybe { $0.integer() },
            useCount: integer(), expiresAt: maybe { $0.date() }, revokedAt: maybe { $0.date() },
            status: pick([.active, .expired, .exhausted, .revoked]), createdAt: date())
    }

    mutating func invitePreview() -> InvitePreview {
        InvitePreview(
            communityId: uuid(), name: text(), iconUrl: maybe { $0.url() }, memberCount: integer(),
            expiresAt: maybe { $0.date() })
    }

    mutating func user() -> User {
        User(
            id: uuid(), email: string(upTo: 12) + "@example.com", displayName: text(), avatarUrl: maybe { $0.url() },
            deletionScheduledAt: maybe { $0.date() }, createdAt: date(), updatedAt: date())
    }

    // MARK: Calendar

    mutating func rsvp(familyMember: Bool? = nil) -> EventRSVP {
        EventRSVP(
            familyMemberId: (familyMember ?? chance(0.5)) ? uuid() : nil, status: pick(RSVPStatus.self),
            plusOnes: integer(), note: maybe { $0.string() }, waitlisted: chance(0.3), respondedAt: date())
    }

    mutating func counts() -> AttendanceCounts {
        AttendanceCounts(
            going: integer(), seats: integer(), maybe: integer(), declined: integer(), waitlisted: integer(),
            capacity: maybe { $0.integer() })
    }

    /// A single event, a series, an override or an instance in a window (answers and counts set).
    mutating func event() -> CalendarEvent {
        let allDay = chance(0.3)
        var event = CalendarEvent(
            id: uuid(), communityId: uuid(), createdBy: uuid(), title: text(),
            description: maybe { $0.string(upTo: 80) },
            startsAt: date(), endsAt: maybe { $0.date() }, allDay: allDay, startDate: allDay ? "2026-01-04" : nil,
            endDate: maybe { _ in "2026-01-05" }, timeZone: pick(["UTC", "Europe/Berlin", "Pacific/Chatham"]),
            locationName: maybe { $0.text() }, locationLat: maybe { $0.double() }, locationLng: maybe { $0.double() },
            locationAddress: maybe { $0.string() }, category: pick(EventCategory.self),
            attachments: list(0...2) { $0.json(depth: 2) }, rsvpDeadline: maybe { $0.date() },
            capacity: maybe { $0.integer() },
            recurrenceRule: maybe { _ in "FREQ=WEEKLY;BYDAY=TU,TH;UNTIL=20261231T235959Z" },
            exceptionDates: list(0...3) { $0.date() }, recurrenceParentId: maybe { $0.uuid() },
            recurrenceId: maybe { $0.date() }, cancelled: chance(0.2), sequence: integer(), createdAt: date(),
            updatedAt: date())
        if chance(0.6) {
            event.rsvp = maybe { $0.rsvp(familyMember: false) }
            event.dependantRsvps = list(0...2) { $0.rsvp(familyMember: true) }
            event.attendance = maybe { $0.counts() }
        }
        return event
    }

    mutating func attendanceEntry() -> AttendanceEntry {
        AttendanceEntry(
            userId: uuid(), displayName: text(), familyMemberId: maybe { $0.uuid() },
            familyMemberName: maybe { $0.text() },
            status: pick(RSVPStatus.self), plusOnes: integer(), note: maybe { $0.string() }, waitlisted: chance(0.3),
            respondedAt: date())
    }

    mutating func attendance() -> EventAttendance {
        EventAttendance(
            eventId: uuid(), recurrenceId: maybe { $0.date() }, counts: counts(),
            responses: list(0...4) { $0.attendanceEntry() })
    }

    mutating func calendarFeed() -> CalendarFeed {
        CalendarFeed(
            id: uuid(), communityId: maybe { $0.uuid() }, url: maybe { $0.url() }, createdAt: date(),
            lastUsedAt: maybe { $0.date() })
    }

    mutating func eventSummary() -> EventSummary {
        EventSummary(
            eventId: uuid(), recurrenceId: maybe { $0.date() }, title: text(), startsAt: date(),
            endsAt: maybe { $0.date() },
            allDay: chance(0.3), timeZone: "Europe/Oslo", locationName: maybe { $0.text() },
            recurrenceRule: maybe { $0.string(upTo: 30) }, createdBy: uuid())
    }

    // MARK: Notifications

    mutating func notificationRecord() -> NotificationRecord {
        NotificationRecord(
            id: uuid(), communityId: maybe { $0.uuid() }, type: pick(NotificationType.self), title: text(),
            body: string(upTo: 60), data: jsonObject(), readAt: maybe { $0.date() }, createdAt: date())
    }

    mutating func preferences() -> NotificationPreferences {
        NotificationPreferences(
            push: chance(0.5),
            categories: Dictionary(
                list(0...9) {
                    ($0.chance(0.8) ? $0.pick(NotificationCategory.self).rawValue : $0.key(), $0.chance(0.5))
                },
                uniquingKeysWith: { _, last in last }),
            mutedEvents: list(0...3) { $0.uuid() },
            quietHours: maybe {
                QuietHours(
                    start: "22:00", end: $0.pick(["07:00", "23:30"]), timeZone: $0.pick(["UTC", "Asia/Tokyo"]),
                    breakThrough: $0.list(0...3) { $0.pick(NotificationCategory.self) })
            })
    }

    mutating func device() -> Device {
        Device(
            token: string(upTo: 64), environment: pick(PushEnvironment.self),
            bundleId: "app.orbitcove" + string(upTo: 4),
            locale: maybe { $0.pick(["en-GB", "nb-NO", "zh-Hant-TW"]) }, createdAt: date(), updatedAt: date())
    }

    // MARK: Sync

    mutating func communitySync() -> CommunitySync {
        var sync = CommunitySync(
            community: maybe { $0.community() },
            members: SyncSection(
                created: list(0...3) { $0.member() }, updated: list(0...3) { $0.member() },
                deleted: list(0...3) { $0.uuid() }),
            syncToken: string(upTo: 30), full: chance(0.5))
        sync.events = SyncSection(created: list(0...2) { $0.json(depth: 3) }, deleted: list(0...2) { $0.uuid() })
        sync.nextPage = maybe { $0.uuidLookalike() }
        return sync
    }
}
