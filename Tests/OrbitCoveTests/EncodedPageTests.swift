import Foundation
import Hummingbird
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// A list page is written once as JSON (``EncodedPage``) and that is what both the response and
/// the cache carry: the envelope around it must be the encoder's own bytes, and a cached page
/// must go out exactly as it was read from the database.
@Suite struct EncodedPageTests {
    @Test(arguments: 0..<40) func aPageIsTheEncodersListEnvelope(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let limit = Int(random.next() % 5) + 1
        let rows = (0..<Int(random.next() % UInt64(limit + 2))).map { _ in Self.member(&random) }
        let encoded = try EncodedPage(rows, of: PageRequest(cursor: nil, limit: limit))
        let items = Array(rows.prefix(limit))
        let hasMore = rows.count > limit
        let meta = ResponseMeta(timestamp: Date(timeIntervalSince1970: 1_800_000_000.5), requestId: "req-\(seed)")
        let expected = ListEnvelope(
            data: items.map(\.0), meta: meta,
            pagination: CursorPagination(
                nextCursor: hasMore ? items.last?.1.token : nil, hasMore: hasMore, limit: limit))
        #expect(
            Array(buffer: try Response.envelope(encoded.items, meta: meta, pagination: encoded.pagination))
                == (try JSONCoding.encoder.encodeBytes(expected)))
        let response = try Response.page(encoded, requestId: "req-\(seed)")
        #expect(response.headers[.contentType] == "application/json; charset=utf-8")
    }

    @Test(arguments: 0..<20) func aStoredPageReadsBackAsItWasWritten(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let limit = Int(random.next() % 3) + 1
        let rows = (0..<Int(random.next() % 5)).map { _ in Self.member(&random) }
        let page = try EncodedPage(rows, of: PageRequest(cursor: nil, limit: limit))
        let read = try #require(EncodedPage(stored: page.stored))
        #expect(read.items.bytes == page.items.bytes)
        #expect(read.pagination.limit == page.pagination.limit)
        #expect(read.pagination.nextCursor == page.pagination.nextCursor)
        #expect(read.pagination.hasMore == page.pagination.hasMore)
        #expect(page.pagination.hasMore == (rows.count > limit))
    }

    /// Whatever else a cache key holds (an older format, a cut-off value) is a miss, not a page.
    @Test(arguments: [
        "", "[]", "20 \n", "20 \n{}", "x \n[]", "0 \n[]", "101 \n[]", "20\n[]", "20 a b\n[]", "-1 \n[]",
        #"[{"member":{},"cursor":"abc"}]"#,
    ])
    func anythingElseStoredIsAMiss(stored: String) {
        #expect(EncodedPage(stored: stored) == nil)
    }

    static func member(_ random: inout SplitMix64) -> (CommunityMember, PageCursor) {
        let joinedAt = Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000) / 7)
        let member = CommunityMember(
            userId: UUID(), displayName: random.next() % 3 == 0 ? "Zoë \"Z\" \\ / \u{1}" : "Member \(random.next())",
            avatarUrl: random.next() % 2 == 0 ? nil : "https://example.com/a/\(random.next()).jpg",
            nickname: random.next() % 2 == 0 ? nil : "nick", role: random.next() % 2 == 0 ? .admin : .member,
            isCreator: random.next() % 2 == 0, joinedAt: joinedAt)
        return (member, PageCursor(createdAt: joinedAt, id: member.userId))
    }
}

/// The byte-wise base64url beside the form it replaced (Foundation's base64 with the
/// characters swapped as strings): the same text out, the same bytes (or refusal) back.
@Suite struct Base64URLTests {
    @Test func itWritesAndReadsWhatTheStringFormDid() {
        var random = SplitMix64(seed: 20_261_129)
        for length in 0..<300 {
            let bytes = Data((0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            let text = bytes.base64URLEncodedString()
            #expect(text == Self.referenceEncoded(bytes))
            #expect(Data(base64URLEncoded: text) == bytes)
        }
        // Arbitrary text, valid or not, from the alphabets of both forms and a few strangers.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= .é|\n")
        for _ in 0..<3000 {
            let text = String(
                (0..<Int(random.next() % 24)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            #expect(Data(base64URLEncoded: text) == Self.referenceDecoded(text), "\(text)")
        }
    }

    static func referenceEncoded(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func referenceDecoded(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// The cache's decoded texts: what a remembered text gives is what decoding it gives, each
/// text its own value, nothing remembered for a text that is not a value, and never more
/// than the capacity.
@Suite struct DecodedTextsTests {
    @Test func aRememberedTextIsWhatDecodingItGives() throws {
        let texts = DecodedTexts<CommunityRecord>(capacity: 8)
        var random = SplitMix64(seed: 7)
        for round in 0..<40 {
            let description = round % 3 == 0 ? "null" : "\"d\(round)\""
            let deletedAt = round % 4 == 0 ? "\"2027-01-15T08:00:02.000Z\"" : "null"
            let text = """
                {"createdAt":"2027-01-15T08:00:00.000Z","createdBy":"\(UUID().lowercasedString)",\
                "creatorIsAdmin":\(round % 2 == 0),"deletedAt":\(deletedAt),"description":\(description),\
                "iconUrl":null,"id":"\(UUID().lowercasedString)","memberCount":\(random.next() % 90),\
                "name":"Club \(random.next() % 5)","settings":\(String(decoding: try JSONCoding.encoder.encode(CommunitySettings.default), as: UTF8.self)),\
                "subscriptionStatus":"active","updatedAt":"2027-01-15T08:00:01.000Z"}
                """
            let record = try JSONCoding.decoder.decode(CommunityRecord.self, from: Data(text.utf8))
            #expect(texts.value(of: text) == record)
            #expect(texts.value(of: text) == record)  // remembered
            #expect(texts.count <= 8)
        }
        // The same community changed (one more member): its new text is its new record.
        let id = UUID().lowercasedString
        let settings = String(decoding: try JSONCoding.encoder.encode(CommunitySettings.default), as: UTF8.self)
        var records: [CommunityRecord] = []
        for count in [3, 4, 3] {
            let text = """
                {"createdAt":"2027-01-15T08:00:00.000Z","createdBy":"\(id)","creatorIsAdmin":true,\
                "deletedAt":null,"description":null,"iconUrl":null,"id":"\(id)","memberCount":\(count),\
                "name":"Club","settings":\(settings),"subscriptionStatus":"active",\
                "updatedAt":"2027-01-15T08:00:01.000Z"}
                """
            records.append(try #require(texts.value(of: text)))
        }
        #expect(records.map(\.memberCount) == [3, 4, 3])
        #expect(texts.value(of: #"{"id":"not a record"}"#) == nil)
        #expect(texts.value(of: "") == nil)
        let memberships = DecodedTexts<CommunityCache.CachedMembership>()
        #expect(memberships.value(of: #"{"role":"admin"}"#) == .init(role: .admin))
        #expect(memberships.value(of: #"{"role":"member"}"#) == .init(role: .member))
        #expect(memberships.value(of: "{}") == .init(role: nil))
        #expect(memberships.count == 3)
    }

    /// A community's settings, as the gate decodes them from its rows
    /// (`CommunityRecord.settings(_:remembered:)`): what decoding the text gives, the first time
    /// and when remembered, each distinct text remembered once; a text that is not settings
    /// still fails, and is not remembered.
    @Test func aCommunitysSettingsAreWhatDecodingThemGives() throws {
        var changed = CommunitySettings.default
        changed.timezone = "Europe/Berlin"
        changed.duesReminderDays = [-3, 1, 7]
        let texts = [
            "{}", #"{"timezone":"America/New_York"}"#,
            String(decoding: try JSONCoding.encoder.encode(CommunitySettings.default), as: UTF8.self),
            String(decoding: try JSONCoding.encoder.encode(changed), as: UTF8.self),
        ]
        let remembered = DecodedTexts<CommunitySettings>()
        for text in texts + texts {
            let decoded = try JSONCoding.decoder.decode(CommunitySettings.self, from: Data(text.utf8))
            #expect(try CommunityRecord.settings(text, remembered: remembered) == decoded, "\(text)")
            #expect(try CommunityRecord.settings(text) == decoded, "\(text)")
        }
        #expect(remembered.count == texts.count)
        #expect(try CommunityRecord.settings(texts[3], remembered: remembered).timezone == "Europe/Berlin")
        #expect(throws: DecodingError.self) { try CommunityRecord.settings("[1]", remembered: remembered) }
        #expect(throws: DecodingError.self) { try CommunityRecord.settings(#"{"timezone":7}"#, remembered: remembered) }
        #expect(remembered.count == texts.count)
    }
}
