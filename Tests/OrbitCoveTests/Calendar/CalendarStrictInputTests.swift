import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// Inputs a stranger sent that the calendar took more leniently than its contract says: each is
/// now refused by name, and nothing of it is stored, or read exactly as the contract says.
@Suite struct CalendarStrictInputTests {
    /// A window's bounds are taken to the nearest microsecond, as PostgreSQL keeps times, before
    /// anything is checked or compared (a probe's: the 400-day check counted a tenth of a
    /// microsecond that the statements did not see).
    @Test func aWindowsBoundsAreTakenToTheMicrosecond() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            _ = try await api.createEvent(in: club, by: coach, #"{"title":"Nine","startsAt":"2031-06-10T09:00:00Z"}"#)
            let day = "2031-06-10T00:00:00Z"
            #expect(try await api.window(club, day, "2031-06-10T09:00:00.000001Z", as: coach).map(\.title) == ["Nine"])
            // Six tenths of a microsecond after nine are the next microsecond, and nine is in;
            // four tenths are nine itself, and the end is exclusive.
            #expect(try await api.window(club, day, "2031-06-10T09:00:00.0000006Z", as: coach).map(\.title) == ["Nine"])
            #expect(try await api.window(club, day, "2031-06-10T09:00:00.0000004Z", as: coach).isEmpty)
            // Exactly 400 days once the tenth is dropped.
            let long = try await api.call(
                .get,
                "/api/v1/communities/\(club.id)/events?from=2031-01-01T00:00:00Z&to=2032-02-05T00:00:00.0000001Z",
                as: coach)
            #expect(long.status == .ok)
        }
    }

    /// RFC 3339 lets `t` and `z` be lowercase and a fraction have any number of digits;
    /// Foundation's parser refused a lowercase `t` and a tenth digit, so both were a 400 (found
    /// by a hostile probe). Each form is now the time it names, in a body and in a window.
    @Test func everyRFC3339FormOfATimeIsTaken() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let event = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Lower","startsAt":"2031-05-04t18:30:00.1234567891234z","endsAt":"2031-05-04t22:00:00+02:00"}"#
            )
            #expect(JSONCoding.formatTimestamp(event.startsAt) == "2031-05-04T18:30:00.123Z")
            #expect(event.endsAt.map(JSONCoding.formatTimestamp) == "2031-05-04T20:00:00.000Z")
            let window = try await api.window(
                club, "2031-05-04t00:00:00.0000000001z", "2031-05-05T00:00:00.99999999999Z", as: coach)
            #expect(window.map(\.id) == [event.id])
            // The fraction counts: the event starts at .123457 (to the microsecond), so a window
            // ending at .124 shows it and one ending at .123 does not.
            let after = try await api.window(
                club, "2031-05-04t18:00:00z", "2031-05-04t18:30:00.1240000000001z", as: coach)
            #expect(after.map(\.id) == [event.id])
            let at = try await api.window(club, "2031-05-04t18:00:00z", "2031-05-04t18:30:00.1230000000001z", as: coach)
            #expect(at.isEmpty)
        }
    }

    /// A time is the microsecond it is kept as, wherever it is checked: a deadline four tenths
    /// of a microsecond after the start was refused as after it, an instance named a tenth of a
    /// microsecond late was not found, though both are stored as the start (a hostile probe's).
    @Test func aTimeIsCheckedAsTheMicrosecondItIsKeptAs() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let events = "/api/v1/communities/\(club.id)/events"
            let deadline = try await api.call(
                .post, events, as: coach,
                json: #"{"title":"x","startsAt":"2031-07-01T10:00:00Z","rsvpDeadline":"2031-07-01T10:00:00.0000004Z"}"#)
            #expect(deadline.status == .created)
            let month = try await api.call(
                .post, events, as: coach,
                json: #"{"title":"x","startsAt":"2031-07-01T10:00:00Z","endsAt":"2031-08-01T10:00:00.0000001Z"}"#)
            #expect(month.status == .created)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Weekly","startsAt":"2031-07-07T09:00:00Z","recurrenceRule":"FREQ=WEEKLY;COUNT=5"}"#)
            let instance = try await api.call(
                .get, "\(events)/\(series.id)?recurrenceId=2031-07-14T09:00:00.0000001Z", as: coach)
            #expect(instance.status == .ok)
            let skipped = try await api.call(
                .patch, "\(events)/\(series.id)", as: coach,
                json: #"{"exceptionDates":["2031-07-21T09:00:00.0000001Z"]}"#)
            #expect(skipped.status == .ok)
        }
    }

    /// `23:59:60` (a leap second) was read as the next day's midnight: now a 400 naming the
    /// field, wherever a time is taken.
    @Test func aLeapSecondIsRefusedByName() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let events = "/api/v1/communities/\(club.id)/events"
            for (body, field) in [
                (#"{"title":"Leap","startsAt":"2031-06-30T23:59:60Z"}"#, "startsAt"),
                (#"{"title":"Leap","startsAt":"2031-06-30T20:00:00Z","endsAt":"2031-06-30T23:59:60Z"}"#, "endsAt"),
                (
                    #"{"title":"Leap","startsAt":"2031-07-01T20:00:00Z","rsvpDeadline":"2031-06-30T23:59:60+00:00"}"#,
                    "rsvpDeadline"
                ),
                (
                    #"{"title":"Leap","startsAt":"2031-06-30T00:00:00Z","recurrenceRule":"FREQ=DAILY;COUNT=3","exceptionDates":["2031-06-30T23:59:60Z"]}"#,
                    "exceptionDates"
                ),
                // Days that do not exist are not rolled over into the next month either.
                (#"{"title":"Nope","startsAt":"2031-02-30T10:00:00Z"}"#, "startsAt"),
                (#"{"title":"Nope","startsAt":"2031-04-30T10:00:00Z","endsAt":"2031-04-31T12:00:00Z"}"#, "endsAt"),
                (#"{"title":"Nope","startsAt":"2030-02-29T10:00:00+01:00"}"#, "startsAt"),
                (#"{"title":"Nope","startsAt":"2031-00-10T10:00:00Z"}"#, "startsAt"),
            ] {
                let reply = try await api.call(.post, events, as: coach, json: body)
                #expect(reply.status == .badRequest && reply.errorCode == "VALIDATION_FAILED", "\(body)")
                #expect(reply.fieldErrors[field] != nil, "\(body)")
            }
            let window = try await api.call(
                .get, "\(events)?from=2031-06-30T23:59:60Z&to=2031-07-02T00:00:00Z", as: coach)
            #expect(window.status == .badRequest && window.fieldErrors["from"] != nil)
            #expect(try await api.window(club, "2031-06-01T00:00:00Z", "2031-08-01T00:00:00Z", as: coach).isEmpty)
            // A leap day that exists is a day like any other.
            let leapDay = try await api.call(
                .post, events, as: coach, json: #"{"title":"Leap day","startsAt":"2032-02-29T10:00:00Z"}"#)
            #expect(leapDay.status == .created)
        }
    }

    /// RFC 5545 wants UNTIL as a UTC time beside a zoned start and as a date beside an all-day
    /// one; another form was rewritten into that one, now it is a 422. A series made all-day
    /// keeps its end in the new form (so the rule it reads back is one it may send).
    @Test func untilMustHaveTheFormOfTheSeriesStart() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach, settings: #"{"timezone":"Europe/Berlin"}"#)
            let events = "/api/v1/communities/\(club.id)/events"
            for (start, allDay, rule) in [
                ("2031-06-03T18:00:00+02:00", false, "FREQ=WEEKLY;UNTIL=20310624"),
                ("2031-06-03T18:00:00+02:00", false, "FREQ=WEEKLY;UNTIL=20310624T180000"),
                ("2031-06-03", true, "FREQ=WEEKLY;UNTIL=20310624T000000Z"),
            ] {
                let reply = try await api.call(
                    .post, events, as: coach,
                    json:
                        #"{"title":"Practice","startsAt":"\#(start)","allDay":\#(allDay),"recurrenceRule":"\#(rule)"}"#)
                #expect(reply.status == .unprocessableContent && reply.errorCode == "UNSUPPORTED_RECURRENCE", "\(rule)")
                #expect(reply.fieldErrors["recurrenceRule"]?.contains("UNTIL") == true, "\(rule)")
            }
            #expect(try await api.window(club, "2031-06-01T00:00:00Z", "2031-08-01T00:00:00Z", as: coach).isEmpty)

            let timed = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Practice","startsAt":"2031-06-03T18:00:00+02:00","recurrenceRule":"FREQ=WEEKLY;UNTIL=20310624T160000Z"}"#
            )
            let path = "\(events)/\(timed.id)"
            let allDay = try await api.call(.patch, path, as: coach, json: #"{"allDay":true}"#)
            #expect(allDay.status == .ok)
            let rule = try allDay.data(CalendarEvent.self).recurrenceRule
            #expect(rule == "FREQ=WEEKLY;UNTIL=20310624")
            let sentBack = try await api.call(.patch, path, as: coach, json: #"{"recurrenceRule":"\#(rule ?? "")"}"#)
            #expect(sentBack.status == .ok)
            let timedAgain = try await api.call(
                .patch, path, as: coach, json: #"{"allDay":false,"startsAt":"2031-06-03T18:00:00+02:00"}"#)
            #expect(try timedAgain.data(CalendarEvent.self).recurrenceRule == "FREQ=WEEKLY;UNTIL=20310624T215959Z")
        }
    }

    /// The calendar takes times in the years 1900 to 2199 (UTC), and a rule's end is one.
    @Test func untilOutsideTheCalendarsYearsIsRefused() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            for (start, allDay, until) in [
                ("2031-06-03T18:00:00Z", false, "99991231T235959Z"),
                ("2031-06-03T18:00:00Z", false, "22000101T000000Z"),
                ("2031-06-03", true, "99991231"),
            ] {
                let reply = try await api.call(
                    .post, "/api/v1/communities/\(club.id)/events", as: coach,
                    json:
                        #"{"title":"Forever","startsAt":"\#(start)","allDay":\#(allDay),"recurrenceRule":"FREQ=WEEKLY;UNTIL=\#(until)"}"#
                )
                #expect(
                    reply.status == .unprocessableContent && reply.errorCode == "UNSUPPORTED_RECURRENCE", "\(until)")
                let said = reply.fieldErrors["recurrenceRule"]
                #expect(said == "UNTIL must be in the years 1900 to 2199 (UTC)", "\(until)")
            }
            let last = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Until the end","startsAt":"2031-06-03T18:00:00Z","recurrenceRule":"FREQ=YEARLY;UNTIL=21991231T235959Z"}"#
            )
            #expect(last.recurrenceRule == "FREQ=YEARLY;UNTIL=21991231T235959Z")
            // A window reaches the calendar's last moment: its end is exclusive, so 2200 itself
            // (a probe's: the last instant of 2199 could not be read). An event at the very
            // end is in it.
            let lastMoment = try await api.createEvent(
                in: club, by: coach, #"{"title":"Midnight","startsAt":"2199-12-31T23:59:59.500Z"}"#)
            let window = try await api.window(club, "2199-12-31T00:00:00Z", "2200-01-01T00:00:00Z", as: coach)
            #expect(window.contains { $0.id == lastMoment.id })
            let past = try await api.call(
                .get, "/api/v1/communities/\(club.id)/events?from=2199-12-31T00:00:00Z&to=2200-01-01T00:00:01Z",
                as: coach)
            #expect(past.status == .badRequest && past.fieldErrors.keys.sorted() == ["to"])
            // A start out of the years names the start alone, not the end and deadline it did
            // not send (a probe's).
            let outside = try await api.call(
                .post, "/api/v1/communities/\(club.id)/events", as: coach,
                json: #"{"title":"Later","startsAt":"2300-01-01T10:00:00Z"}"#)
            #expect(outside.status == .badRequest && outside.fieldErrors.keys.sorted() == ["startsAt"])
        }
    }

    /// Exception dates name removed instances: each once (the same instant twice, however
    /// written, is a 400), at most 1,000 in a request, and a series keeps at most 1,000 (a
    /// DELETE of one more instance is a 422).
    @Test func exceptionDatesAreDistinctAndBounded() async throws {
        try await CoreHarness.run { api in
            let coach = try await api.signIn("Coach")
            let club = try await api.community(by: coach)
            let series = try await api.createEvent(
                in: club, by: coach,
                #"{"title":"Daily","startsAt":"2031-01-01T09:00:00Z","recurrenceRule":"FREQ=DAILY;COUNT=1200"}"#)
            let path = "/api/v1/communities/\(club.id)/events/\(series.id)"
            let same = Array(repeating: #""2031-01-02T09:00:00Z""#, count: 979) + [#""2031-01-02T10:00:00+01:00""#]
            let repeated = try await api.call(
                .patch, path, as: coach, json: #"{"exceptionDates":[\#(same.joined(separator: ","))]}"#)
            #expect(
                repeated.status == .badRequest
                    && repeated.fieldErrors["exceptionDates"] == "must name each instance once")
            #expect(try await api.call(.get, path, as: coach).data(CalendarEvent.self).exceptionDates.isEmpty)
            let tooMany = (0..<1_001).map { "\"\(utc(series.startsAt.addingTimeInterval(Double($0) * 86_400)))\"" }
            let refused = try await api.call(
                .patch, path, as: coach, json: #"{"exceptionDates":[\#(tooMany.joined(separator: ","))]}"#)
            #expect(refused.status == .badRequest && refused.fieldErrors["exceptionDates"] != nil)

            let thousand = try await api.call(
                .patch, path, as: coach, json: #"{"exceptionDates":[\#(tooMany.prefix(1_000).joined(separator: ","))]}"#
            )
            #expect(try thousand.data(CalendarEvent.self).exceptionDates.count == 1_000)
            let next = utc(series.startsAt.addingTimeInterval(1_000 * 86_400))
            let full = try await api.call(.delete, "\(path)?recurrenceId=\(next)", as: coach)
            #expect(full.status == .unprocessableContent && full.errorCode == "UNSUPPORTED_RECURRENCE")
            #expect(full.fieldErrors["exceptionDates"] != nil)
            #expect(try await api.call(.get, path, as: coach).data(CalendarEvent.self).exceptionDates.count == 1_000)
        }
    }
}
