import CoreService
import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// A PATCH clears a field with `"clear": ["field"]` (what a generated client can send) exactly
/// as with `"field": null` (the older wire form, which keeps working): `FieldReader` turns the
/// list into `null`s before any route reads a field.
@Suite struct ClearListTests {
    @Test func theListBecomesNullsBeforeAnyFieldIsRead() {
        let reader = FieldReader(
            ["clear": .array([.string("avatarUrl")]), "displayName": .string("Ada")],
            allowed: ["displayName", "avatarUrl"], readsClearList: true)
        #expect(reader.problems.isEmpty)
        #expect(reader.fields == ["avatarUrl": .null, "displayName": .string("Ada")])
        // Naming a field also sent as null says the same thing twice: allowed.
        let both = FieldReader(
            ["clear": .array([.string("avatarUrl")]), "avatarUrl": .null], allowed: ["avatarUrl"], readsClearList: true)
        #expect(both.problems.isEmpty && both.fields == ["avatarUrl": .null])
        #expect(
            FieldReader(["clear": .array([])], allowed: ["avatarUrl"], readsClearList: true).fields.isEmpty)
    }

    /// A text's limit counts what was sent, as the API document's `maxLength` does: spaces the
    /// reader trims away still count (schemathesis found a 101-character name with a leading
    /// tab accepted).
    @Test func aTextsLimitCountsWhatWasSentBeforeTheTrim() {
        var padded = FieldReader(["name": .string("\t" + String(repeating: "a", count: 100))], allowed: ["name"])
        #expect(padded.text("name", maxLength: 100).value == nil && padded.problems["name"] != nil)
        var fits = FieldReader(["name": .string(" " + String(repeating: "a", count: 99))], allowed: ["name"])
        #expect(fits.text("name", maxLength: 100).value == String(repeating: "a", count: 99) && fits.problems.isEmpty)
    }

    /// A text of nothing one can see is empty: whitespace, and characters that draw nothing
    /// (direction marks and overrides, joiners, the byte-order mark, the soft hyphen). A hostile
    /// probe's: `"\u{202E}"` passed as a description where `"\u{200B}"` was refused. Visible text
    /// keeps them.
    @Test func aTextOfNothingVisibleIsEmpty() {
        for blank in [
            "\u{202E}", "\u{FEFF}", "\u{2060}", "\u{00AD}", "\u{200E}", "\u{180E}", "\u{034F}", "\u{115F}",
            "\u{202E}\u{200B}\u{FEFF}", " \u{200B}\t",
        ] {
            var required = FieldReader(["name": .string(blank)], allowed: ["name"])
            #expect(
                required.text("name", maxLength: 100, required: true).value == nil,
                "\(blank.unicodeScalars.map(\.value))")
            #expect(required.problems["name"] == "must not be empty")
            var optional = FieldReader(["note": .string(blank)], allowed: ["note"])
            guard case .clear = optional.text("note", maxLength: 100) else {
                Issue.record("\(blank.unicodeScalars.map(\.value)) was kept as a note")
                continue
            }
        }
        var marked = FieldReader(["name": .string("\u{200F}שלום")], allowed: ["name"])
        #expect(marked.text("name", maxLength: 100, required: true).value == "\u{200F}שלום")
    }

    @Test func aBadListIsRefusedByName() {
        let bodies: [[String: JSONValue]] = [
            ["clear": .string("avatarUrl")],
            ["clear": .array([.number(1)])],
            ["clear": .array([.string("email")])],
            ["clear": .array([.string("avatarUrl")]), "avatarUrl": .string("https://x.test/a.png")],
        ]
        for body in bodies {
            let reader = FieldReader(body, allowed: ["avatarUrl"], readsClearList: true)
            #expect(reader.problems.keys.sorted() == ["clear"], "\(body)")
        }
        // A long name is not echoed back whole.
        let long = FieldReader(
            ["clear": .array([.string(String(repeating: "😀", count: 5_000))])], allowed: ["avatarUrl"],
            readsClearList: true)
        #expect((long.problems["clear"]?.count ?? .max) < 200)
        // Where the body is not a PATCH's, or null cannot clear, `clear` is no field.
        let post = FieldReader(["clear": .array([.string("avatarUrl")])], allowed: ["avatarUrl"])
        #expect(post.problems["clear"] == "is not a field of this request" && post.fields["avatarUrl"] == nil)
        let strict = FieldReader(
            ["clear": .array([])], allowed: ["avatarUrl"], nullClears: false, readsClearList: true)
        #expect(strict.problems["clear"] == "is not a field of this request")
    }

    @Test func everyPatchRouteClearsWithTheListAsWithNull() async throws {
        try await CoreHarness.run { api in
            let ada = try await api.signIn("Ada")
            // The profile.
            try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":"https://x.test/a.png"}"#)
            let me = try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"clear":["avatarUrl"]}"#)
            #expect(me.status == .ok)
            #expect(try me.data(User.self).avatarUrl == nil && me.data(User.self).displayName == "Ada")
            try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":"https://x.test/b.png"}"#)
            #expect(
                try await api.call(.patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":null}"#).data(User.self)
                    .avatarUrl == nil)
            let twice = try await api.call(
                .patch, "/api/v1/me", as: ada, json: #"{"avatarUrl":"https://x.test/c.png","clear":["avatarUrl"]}"#)
            #expect(twice.status == .badRequest && twice.fieldErrors.keys.sorted() == ["clear"])

            // A family member.
            let child = try await api.call(
                .post, "/api/v1/me/family-members", as: ada,
                json: #"{"name":"Tommy","avatarUrl":"https://x.test/t.png"}"#
            ).data(FamilyMember.self)
            let plain = try await api.call(
                .patch, "/api/v1/me/family-members/\(child.id)", as: ada, json: #"{"clear":["avatarUrl"]}"#)
            #expect(try plain.data(FamilyMember.self).avatarUrl == nil && plain.data(FamilyMember.self).name == "Tommy")
            // Creating is no PATCH: nothing to clear there.
            let created = try await api.call(
                .post, "/api/v1/me/family-members", as: ada, json: #"{"name":"Lina","clear":["avatarUrl"]}"#)
            #expect(created.status == .badRequest && created.fieldErrors["clear"] != nil)

            // A community.
            let club = try await api.community(by: ada)
            let community = "/api/v1/communities/\(club.id)"
            try await api.call(.patch, community, as: ada, json: #"{"description":"Under elevens"}"#)
            let cleared = try await api.call(.patch, community, as: ada, json: #"{"clear":["description","iconUrl"]}"#)
            #expect(cleared.status == .ok)
            #expect(try cleared.data(Community.self).description == nil)

            // An event: the end, a number and a text, in one list.
            let event = try await api.createEvent(
                in: club, by: ada,
                #"{"title":"Practice","startsAt":"2031-06-03T18:00:00+02:00","endsAt":"2031-06-03T19:30:00+02:00","capacity":12,"locationName":"Pitch 2"}"#
            )
            let changed = try await api.call(
                .patch, "\(community)/events/\(event.id)", as: ada,
                json: #"{"title":"Training","clear":["endsAt","capacity","locationName"]}"#)
            #expect(changed.status == .ok, "\(String(decoding: changed.body, as: UTF8.self))")
            let after = try changed.data(CalendarEvent.self)
            #expect(
                after.title == "Training" && after.endsAt == nil && after.capacity == nil && after.locationName == nil)
            // A field that cannot be cleared is refused as its null is.
            let title = try await api.call(
                .patch, "\(community)/events/\(event.id)", as: ada, json: #"{"clear":["title"]}"#)
            #expect(title.status == .badRequest && title.fieldErrors["title"] != nil)

            // Quiet hours.
            let preferences = "\(community)/members/me/notification-preferences"
            try await api.call(
                .patch, preferences, as: ada, json: #"{"quietHours":{"start":"22:00","end":"07:00","timeZone":"UTC"}}"#)
            let quiet = try await api.call(.patch, preferences, as: ada, json: #"{"clear":["quietHours"]}"#)
            #expect(try quiet.data(NotificationPreferences.self).quietHours == nil)
        }
    }
}
