import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

@Suite struct ModelsTests {
    @Test func envelopeRoundTripsAndExposesItsHead() throws {
        let payload = CommunityCreated(communityId: UUID(), name: "Tigers U10", createdBy: UUID())
        let envelope = MessageEnvelope(communityId: payload.communityId, actorId: payload.createdBy, data: payload)
        let bytes = try JSONCoding.encoder.encode(envelope)

        let head = try JSONCoding.decoder.decode(EnvelopeHead.self, from: bytes)
        #expect(head.id == envelope.id)
        #expect(head.type == "community.created")
        #expect(head.version == 1)
        #expect(head.communityId == payload.communityId)

        let decoded = try JSONCoding.decoder.decode(MessageEnvelope<CommunityCreated>.self, from: bytes)
        #expect(decoded.data == payload)
        #expect(abs(decoded.occurredAt.timeIntervalSince(envelope.occurredAt)) < 0.001)
    }

    @Test func envelopeUsesTheDocumentedFieldNames() throws {
        let envelope = MessageEnvelope(
            communityId: nil, actorId: nil, data: CommunityCreated(communityId: UUID(), name: "x", createdBy: UUID()))
        let object = try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(envelope)) as? [String: Any]
        #expect(Set(object?.keys.map { $0 } ?? []) == ["id", "type", "version", "occurredAt", "data"])
        let occurredAt = try #require(object?["occurredAt"] as? String)
        #expect(occurredAt.hasSuffix("Z"))
    }

    @Test func randomUUIDsAreVersionFourWithTheRFCVariantAndDoNotRepeat() {
        let ids = (0..<10_000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(100) {
            let text = id.uuidString
            let characters = Array(text)
            #expect(characters[14] == "4", "version nibble of \(text)")
            #expect("89AB".contains(characters[19]), "variant of \(text)")
            #expect(UUID(uuidString: text) == id)
        }
        // Every other nibble varies: the bits are random, not a fixed pattern.
        let distinctFirstBytes = Set(ids.map { $0.uuid.0 })
        #expect(distinctFirstBytes.count > 200)
    }

    @Test func communitySettingsFillMissingKeysWithDefaults() throws {
        let settings = try JSONCoding.decoder.decode(
            CommunitySettings.self, from: Data(#"{"timezone":"Europe/Oslo"}"#.utf8))
        #expect(settings.timezone == "Europe/Oslo")
        #expect(settings.allowMemberEvents)
        #expect(settings.defaultReminderHours == 24)
    }

    @Test func errorEnvelopeHasTheSeedShape() throws {
        let envelope = ErrorEnvelope(code: "COMMUNITY_NOT_FOUND", message: "No such community", details: ["id": "x"])
        let json = String(decoding: try JSONCoding.encoder.encode(envelope), as: UTF8.self)
        #expect(json == #"{"error":{"code":"COMMUNITY_NOT_FOUND","details":{"id":"x"},"message":"No such community"}}"#)
    }

    @Test(arguments: [
        #"{"a":[1,true,null,"x",{"b":2.5}]}"#,
        #"{"nested":{"deep":{"deeper":[]}}}"#,
    ])
    func jsonValueRoundTrips(_ text: String) throws {
        let value = try JSONCoding.decoder.decode(JSONValue.self, from: Data(text.utf8))
        let again = try JSONCoding.decoder.decode(JSONValue.self, from: JSONCoding.encoder.encode(value))
        #expect(value == again)
    }

    @Test func timestampsAreUTCWithMilliseconds() throws {
        let date = Date(timeIntervalSince1970: 1_767_528_000.125)
        #expect(JSONCoding.formatTimestamp(date) == "2026-01-04T12:00:00.125Z")
        #expect(JSONCoding.parseTimestamp("2026-01-04T12:00:00Z") == Date(timeIntervalSince1970: 1_767_528_000))
        #expect(JSONCoding.parseTimestamp("yesterday") == nil)
    }

    /// The hand-written parser against Foundation's, on what Foundation reads: random times from
    /// 1900 to 2100, with none to nine fractional digits and offsets from -18:00 to +18:00
    /// (Foundation's `TimeZone` takes no more; RFC 3339, and ours, up to 23:59). The calendar
    /// and the offset are Foundation's (the text without its fraction); the fraction is counted
    /// in integers, to the nearest microsecond, halves up: Foundation goes through a `Double`
    /// there and lands a microsecond off for some fractions of seven digits or more
    /// (`.72722952` read as `.727229`), where ours must be exact.
    @Test func theTimestampParserAgreesWithFoundation() throws {
        var random = SplitMix64(seed: 20_261_201)
        for _ in 0..<3_000 {
            let seconds = -2_208_988_800 + Int64(random.next() % 6_311_433_600)
            let whole = JSONCoding.formatTimestamp(Date(timeIntervalSince1970: Double(seconds))).prefix(19)
            let digits = Int(random.next() % 10)
            let nanos = String(format: "%09llu", random.next() % 1_000_000_000).prefix(digits)
            let minutes = Int(random.next() % 2_161) - 1_080
            // `+01:00` (RFC 3339), `+0100` and, for whole hours, `+01` (ISO 8601's other forms).
            let form = minutes % 60 == 0 ? ["%02d:%02d", "%02d%02d", "%02d"] : ["%02d:%02d", "%02d%02d"]
            let pattern = form[Int(random.next() % UInt64(form.count))]
            let offset =
                minutes == 0
                ? "Z" : (minutes < 0 ? "-" : "+") + String(format: pattern, abs(minutes) / 60, abs(minutes) % 60)
            let text = "\(whole)\(digits == 0 ? "" : "." + nanos)\(offset)"
            let ours = try #require(JSONCoding.parseTimestamp(text), "\(text)")
            let wholeSecond = try #require(try? Date.ISO8601FormatStyle().parse("\(whole)\(offset)"), "\(text)")
            let fraction = (Int64(nanos.padding(toLength: 9, withPad: "0", startingAt: 0)) ?? 0)
            let expected = Int64(wholeSecond.timeIntervalSince1970) * 1_000_000 + (fraction + 500) / 1_000
            #expect(ExactTimestamp.microsecondsSince1970(ours) == expected, "\(text)")
        }
    }

    /// Every RFC 3339 spelling of a time is that time (`t` and `z` in either case, a fraction of
    /// more than nine digits, cut there, and ISO 8601's `+0100` and `+01` beside `+01:00`), and
    /// what is not one is refused: Foundation's parser took the first three of the refused below
    /// (the second as an offset with seconds), and refused all but the last of the spellings.
    @Test func everySpellingOfATimeParsesToItAndNothingElseParses() throws {
        var random = SplitMix64(seed: 20_261_202)
        for _ in 0..<1_000 {
            let seconds = -2_208_988_800 + Int64(random.next() % 6_311_433_600)
            let nanos = String(format: "%09llu", random.next() % 1_000_000_000)
            let whole = JSONCoding.formatTimestamp(Date(timeIntervalSince1970: Double(seconds))).prefix(19)
            let plain = try #require(JSONCoding.parseTimestamp("\(whole).\(nanos)Z"))
            let (date, time) = (whole.prefix(10), whole.dropFirst(11))
            for spelling in [
                "\(date)t\(time).\(nanos)z", "\(date)T\(time).\(nanos)0Z", "\(date)t\(time).\(nanos)999999999999z",
                "\(date)T\(time).\(nanos)\(nanos)+00:00", "\(date)T\(time).\(nanos)-00:00",
            ] {
                #expect(JSONCoding.parseTimestamp(spelling) == plain, "\(spelling)")
            }
        }
        #expect(
            JSONCoding.parseTimestamp("2026-01-04T12:00:00.5+01:30") == Date(timeIntervalSince1970: 1_767_522_600.5))
        #expect(JSONCoding.parseTimestamp("2026-01-04T12:00:00-23:59") == Date(timeIntervalSince1970: 1_767_614_340))
        for offset in ["+0130", "+01:30"] {
            #expect(
                JSONCoding.parseTimestamp("2026-01-04T12:00:00\(offset)") == Date(timeIntervalSince1970: 1_767_522_600))
        }
        #expect(JSONCoding.parseTimestamp("2026-01-04T12:00:00-01") == Date(timeIntervalSince1970: 1_767_531_600))
        for refused in [
            "2026-01-04T12:00:00Zjunk", "2026-01-04T12:00:00.5+01:0012", "2026-01-04T12:00:00+01:00x",
            "2026-01-04x12:00:00Z", "2026-01-04T12:00:00.Z", "2026-01-04T12:00:00.1234567891", "2026-01-04t12:00:00",
            "2026-01-04 12:00:00Z", "2026-01-04T12:00:00+24:00", "2026-01-04T12:00:00+01:60",
            "2026-01-04T12:00:00+0160", "2026-01-04T12:00:00+010", "2026-01-04T12:00:00+01:0",
            "2026-01-04T12:00:00+01:", "2026-01-04T12:00:00+1", "2026-01-04T12:00:00+01:00:00",
            "2026-01-04T12:00:00UTC", "2026-01-04T12:00", "2026-01-04", "", "+2026-01-04T12:00:00Z",
            "2026-1-04T12:00:00Z", "2026-01-04T12:00:00ZZ", "2026-01-04T12:00:00 Z", "２026-01-04T12:00:00Z",
        ] {
            #expect(JSONCoding.parseTimestamp(refused) == nil, "\(refused)")
        }
    }

    /// The hand-written formatter against Foundation's, over leap years, year ends and dates
    /// before 1970 (whole milliseconds plus 0.2 ms, where truncating and rounding agree).
    @Test func theTimestampFormatAgreesWithFoundation() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let edges: [Int64] = [0, -1, 951_782_400_000, 951_868_799_999, 1_767_225_599_999, -2_208_988_800_000]
        let randoms = (0..<2000).map { _ in Int64.random(in: -2_208_988_800_000...4_102_444_800_000) }
        for millis in edges + randoms {
            let date = Date(timeIntervalSince1970: (Double(millis) + 0.2) / 1000)
            #expect(JSONCoding.formatTimestamp(date) == date.formatted(style), "\(millis)")
        }
    }

    @Test func absentOptionalFieldsAreEncodedAsNull() throws {
        let now = Date(timeIntervalSince1970: 1_767_528_000)
        let user = User(
            id: UUID(), email: "a@example.com", displayName: "A", avatarUrl: nil, createdAt: now, updatedAt: now)
        let object = try #require(
            JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(user)) as? [String: Any])
        #expect(object["avatarUrl"] is NSNull)

        let decodedWithoutKey = try JSONCoding.decoder.decode(
            User.self,
            from: Data(
                #"{"id":"\#(user.id)","email":"a@example.com","displayName":"A","createdAt":"2026-01-04T12:00:00Z","updatedAt":"2026-01-04T12:00:00Z"}"#
                    .utf8))
        #expect(decodedWithoutKey == user)

        var withAvatar = user
        withAvatar.avatarUrl = "https://example.com/a.png"
        let again = try JSONCoding.decoder.decode(User.self, from: JSONCoding.encoder.encode(withAvatar))
        #expect(again.avatarUrl == "https://example.com/a.png")
    }
}
