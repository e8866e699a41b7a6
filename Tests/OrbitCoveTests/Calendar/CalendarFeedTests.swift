import CoreService
import Foundation
import HTTPTypes
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Calendar feeds: secret addresses made, listed and revoked by their owner, served as
/// RFC 5545 with ETag and 304, and read by a real parser (icalendar and
/// recurring-ical-events, from PyPI) into exactly the instances the API lists.
@Suite struct CalendarFeedTests {
    /// A feed across two communities: a Berlin series over the DST change with an override
    /// moved to another day and a deleted instance, a New York all-day event, and a single
    /// event. The parser expands the feed into the same instances as the two window reads.
    @Test func aCalendarAppExpandsTheFeedIntoTheAPIsInstances() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let parent = try await api.signIn("Parent")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            let family = try await api.community(by: parent, settings: #"{"timezone":"America/New_York"}"#)
            try await api.join(parent, club, invitedBy: coach)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice; U9","startsAt":"2026-10-06T18:00:00+02:00","endsAt":"2026-10-06T19:30:00+02:00","recurrenceRule":"FREQ=WEEKLY;BYDAY=TU,TH;UNTIL=20261130T000000Z","locationName":"Field, North"}"#
            )
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            #expect(
                try await api.call(
                    .patch, "\(path)?recurrenceId=2026-10-20T16:00:00Z", as: coach,
                    json: #"{"startsAt":"2026-10-21T19:00:00+02:00","title":"Moved to Wednesday"}"#
                ).status == .ok)
            #expect(
                try await api.call(.delete, "\(path)?recurrenceId=2026-11-03T17:00:00Z", as: coach).status == .noContent
            )
            _ = try await api.createEvent(
                in: family, by: parent, #"{"title":"Thanksgiving","startsAt":"2026-11-26","allDay":true}"#)
            _ = try await api.createEvent(
                in: club, by: coach, #"{"title":"Parents' evening","startsAt":"2026-10-15T19:00:00+02:00"}"#)

            let feed = try await api.call(.post, "/api/v1/me/calendar-feeds", as: parent, json: "{}")
            #expect(feed.status == .created)
            let url = try #require(try feed.data(CalendarFeed.self).url)
            let feedPath = String(url[url.range(of: "/api/v1/calendar/")!.lowerBound...])
            let ics = try await api.call(.get, feedPath, as: nil)
            #expect(ics.status == .ok && ics.headers[.contentType] == "text/calendar; charset=utf-8")
            let text = String(decoding: ics.body, as: UTF8.self)
            #expect(text.contains("BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin"))
            #expect(text.contains("EXDATE;TZID=Europe/Berlin:20261103T180000"))
            #expect(text.contains("DTSTART;VALUE=DATE:20261126"))

            let (from, to) = ("2026-10-01T00:00:00Z", "2026-12-01T00:00:00Z")
            var expected: [String] = []
            for community in [club, family] {
                for instance in try await api.window(community, from, to, as: parent) where !instance.cancelled {
                    expected.append(
                        "\(instance.id.lowercasedString)@orbitcove \(instance.startDate ?? utc(instance.startsAt))")
                }
            }
            let parsed = try await CalendarParser.instances(of: ics.body, from: from, to: to)
            let seen = parsed.filter { $0.status != "CANCELLED" }.map { "\($0.uid) \($0.start)" }
            #expect(seen.sorted() == expected.sorted())
            #expect(expected.count == 15 + 1 + 1)
            #expect(parsed.contains { $0.summary == "Moved to Wednesday" && $0.start == "2026-10-21T17:00:00Z" })
        }
    }

    /// ETag and If-None-Match: unchanged is 304 without a body; a change anywhere in it (a
    /// new event) is a new version. Revoked and unknown tokens are 404, as is a
    /// community feed once its owner left the community.
    @Test func feedsAreVersionedAndRevocable() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let club = try await api.community(by: coach)
            try await api.join(ada, club, invitedBy: coach)
            _ = try await api.createEvent(in: club, by: coach, #"{"title":"One","startsAt":"2031-01-01T10:00:00Z"}"#)
            let made = try await api.call(
                .post, "/api/v1/me/calendar-feeds", as: ada, json: #"{"communityId":"\#(club.id)"}"#)
            let feed = try made.data(CalendarFeed.self)
            #expect(feed.communityId == club.id)
            let path = String(feed.url![feed.url!.range(of: "/api/v1/calendar/")!.lowerBound...])

            let first = try await api.call(.get, path, as: nil)
            let etag = try #require(first.headers[.eTag])
            let again = try await api.call(.get, path, as: nil, headers: [.ifNoneMatch: etag])
            #expect(again.status == .notModified && again.body.isEmpty && again.headers[.eTag] == etag)
            // The gateway marks the tag weak when it gzips the feed; clients send it back so.
            let weak = try await api.call(.get, path, as: nil, headers: [.ifNoneMatch: "W/\(etag)"])
            #expect(weak.status == .notModified)
            _ = try await api.createEvent(in: club, by: coach, #"{"title":"Two","startsAt":"2031-01-02T10:00:00Z"}"#)
            let changed = try await api.call(.get, path, as: nil, headers: [.ifNoneMatch: etag])
            #expect(changed.status == .ok && changed.headers[.eTag] != etag)
            #expect(String(decoding: changed.body, as: UTF8.self).contains("SUMMARY:Two"))

            let listed = try await api.call(.get, "/api/v1/me/calendar-feeds", as: ada).data([CalendarFeed].self)
            #expect(listed.map(\.id) == [feed.id] && listed[0].url == nil && listed[0].lastUsedAt != nil)
            let other = try await api.call(.delete, "/api/v1/me/calendar-feeds/\(feed.id)", as: coach)
            #expect(other.status == .notFound)

            // Leaving the community empties its feed; revoking ends it.
            #expect(try await api.call(.post, "/api/v1/communities/\(club.id)/leave", as: ada).status == .noContent)
            #expect(try await api.call(.get, path, as: nil).status == .notFound)
            #expect(try await api.call(.delete, "/api/v1/me/calendar-feeds/\(feed.id)", as: ada).status == .noContent)
            #expect(try await api.call(.get, path, as: nil).status == .notFound)
            let unknown = String(repeating: "ab", count: 32)
            for bad in ["/api/v1/calendar/\(unknown).ics", "/api/v1/calendar/\(unknown)", "/api/v1/calendar/x.ics"] {
                let reply = try await api.call(.get, bad, as: nil)
                #expect(reply.status == .notFound && reply.errorCode == "FEED_NOT_FOUND", "\(bad)")
            }
            // Someone else's community cannot be subscribed to.
            let outsider = try await api.signIn("Eve")
            let refused = try await api.call(
                .post, "/api/v1/me/calendar-feeds", as: outsider, json: #"{"communityId":"\#(club.id)"}"#)
            #expect(refused.status == .notFound)
        }
    }
}

extension CalendarFeedTests {
    /// A removed instance stays, cancelled, for those who said yes or maybe to it, in the feed as
    /// in the window read: a RECURRENCE-ID component with STATUS:CANCELLED (not an EXDATE, which
    /// a calendar app reads as "never was"). For everyone else it is an EXDATE.
    @Test func aRemovedInstanceStaysCancelledInTheFeedsOfThoseWhoSaidYes() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let ada = try await api.signIn("Ada")
            let ben = try await api.signIn("Ben")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            for person in [ada, ben] { try await api.join(person, club, invitedBy: coach) }
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2026-10-06T18:00:00+02:00","endsAt":"2026-10-06T19:30:00+02:00","recurrenceRule":"FREQ=WEEKLY;COUNT=6"}"#
            )
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            let removed = "2026-10-27T17:00:00Z"
            let rsvp = #"{"status":"yes","recurrenceId":"\#(removed)"}"#
            #expect(try await api.call(.post, "\(path)/rsvp", as: ada, json: rsvp).status == .ok)
            #expect(try await api.call(.delete, "\(path)?recurrenceId=\(removed)", as: coach).status == .noContent)

            let (from, to) = ("2026-10-01T00:00:00Z", "2026-12-01T00:00:00Z")
            for (person, answered) in [(ada, true), (ben, false)] {
                let made = try await api.call(
                    .post, "/api/v1/me/calendar-feeds", as: person, json: #"{"communityId":"\#(club.id)"}"#)
                let url = try #require(try made.data(CalendarFeed.self).url)
                let ics = try await api.call(
                    .get, String(url[url.range(of: "/api/v1/calendar/")!.lowerBound...]), as: nil)
                let text = String(decoding: ics.body, as: UTF8.self)
                #expect(text.contains("EXDATE;TZID=Europe/Berlin:20261027T180000") == !answered)
                #expect(text.contains("RECURRENCE-ID;TZID=Europe/Berlin:20261027T180000") == answered)
                var expected: [String] = []
                for instance in try await api.window(club, from, to, as: person) {
                    let status = instance.cancelled ? "CANCELLED" : "CONFIRMED"
                    expected.append("\(utc(instance.startsAt)) \(instance.title) \(status)")
                }
                let parsed = try await CalendarParser.instances(of: ics.body, from: from, to: to)
                #expect(parsed.map { "\($0.start) \($0.summary) \($0.status)" }.sorted() == expected.sorted())
                #expect(expected.count == (answered ? 6 : 5))
                #expect(expected.contains("\(removed) Practice CANCELLED") == answered)
            }
        }
    }

    /// A feed's secret address is not kept for an Idempotency-Key replay (a retry makes a new
    /// feed), and each feed is fetched at most ORBITCOVE_CORE_FEED_FETCHES_PER_MINUTE times.
    @Test func feedAddressesAreNotKeptAndFetchesAreLimited() async throws {
        try await CoreHarness.run(core: ["ORBITCOVE_CORE_FEED_FETCHES_PER_MINUTE": "3"]) { api in
            let ada = try await api.signIn("Ada")
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "feed-\(UUID().uuidString)"]
            let first = try await api.call(.post, "/api/v1/me/calendar-feeds", as: ada, json: "{}", headers: key)
            let second = try await api.call(.post, "/api/v1/me/calendar-feeds", as: ada, json: "{}", headers: key)
            let (one, two) = (try first.data(CalendarFeed.self), try second.data(CalendarFeed.self))
            #expect(one.id != two.id && second.headers[HTTPField.Name("Idempotent-Replayed")!] == nil)
            #expect(first.headers[.cacheControl] == "no-store")
            try await withTestDatabase { database in
                let kept = try await count(
                    "SELECT count(*)::int FROM idempotency_keys WHERE user_id = \(ada.id)", in: database)
                #expect(kept == 0)
            }
            let url = try #require(one.url)
            let path = String(url[url.range(of: "/api/v1/calendar/")!.lowerBound...])
            for _ in 0..<3 { #expect(try await api.call(.get, path, as: nil).status == .ok) }
            let limited = try await api.call(.get, path, as: nil)
            #expect(limited.status == .tooManyRequests)
        }
    }
}

/// The PyPI parser, through scripts/calendar/feed_instances.py in the calendar tools' venv
/// (`scripts/stack.sh install-calendar-tools`, which `make test` runs first).
enum CalendarParser {
    struct Instance: Decodable {
        var uid: String
        var start: String
        var recurrenceId: String?
        var summary: String
        var status: String
    }

    static func instances(of feed: Data, from: String, to: String) async throws -> [Instance] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".local/tools/calendar/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw TestFailure("run scripts/stack.sh install-calendar-tools first (make test does)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString).ics")
        try feed.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let data = try await ChildProcess.output(
            of: python, [root.appendingPathComponent("scripts/calendar/feed_instances.py").path, file.path, from, to])
        return try JSONDecoder().decode([Instance].self, from: data)
    }
}
