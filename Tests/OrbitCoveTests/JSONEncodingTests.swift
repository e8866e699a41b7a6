import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// The API's JSON encoder writes what Foundation's `JSONEncoder` (sorted keys, unescaped
/// slashes, our timestamps) writes, except that UUIDs are lower case (RFC 9562), everywhere.
/// `JSONEncoderPropertyTests` compares the two on random values of every type the API and the
/// queues write; these pin the behaviour on a few hand-made shapes.
@Suite struct JSONEncodingTests {
    static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(JSONCoding.formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// JSONEncoder's output with the given UUIDs lower-cased: what ours must write.
    static func expected(_ value: some Encodable, ids: [UUID]) throws -> String {
        var text = String(decoding: try reference.encode(value), as: UTF8.self)
        for id in ids { text = text.replacingOccurrences(of: id.uuidString, with: id.lowercasedString) }
        return text
    }

    static func ours(_ value: some Encodable) throws -> String {
        String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self)
    }

    @Test func responsesMatchJSONEncoderWithLowerCaseIds() throws {
        let (communityId, creator) = (UUID.random(), UUID.random())
        let community = Community(
            id: communityId, name: "Tigers U12 \"A\" / Ünïcödé 🐯\n\t", description: nil, iconUrl: "https://x.y/a.png",
            createdBy: creator, memberCount: 42, subscriptionStatus: .free, settings: .default, role: .admin,
            createdAt: Date(timeIntervalSince1970: 1_790_000_000.123), updatedAt: Date(timeIntervalSince1970: -1.5))
        let members = (0..<5).map { index in
            CommunityMember(
                userId: UUID.random(), displayName: "Member \(index)", avatarUrl: index.isMultiple(of: 2) ? nil : "a",
                nickname: nil, role: .member, isCreator: false, joinedAt: Date(timeIntervalSince1970: Double(index)))
        }
        let page = ListEnvelope(
            data: members, meta: ResponseMeta(requestId: "r-1"),
            pagination: CursorPagination(nextCursor: nil, hasMore: false, limit: 20))
        #expect(try Self.ours(community) == Self.expected(community, ids: [communityId, creator]))
        #expect(try Self.ours(page) == Self.expected(page, ids: members.map(\.userId)))
        let details: [String: JSONValue] = [
            "n": .number(0.1), "big": .number(1e21), "neg": .number(-3), "t": .bool(true),
        ]
        let error = ErrorEnvelope(code: "X", message: "m", details: details)
        #expect(try Self.ours(error) == Self.expected(error, ids: []))
    }

    @Test func uuidsAreLowerCaseWhereverTheySit() throws {
        struct Shapes: Encodable {
            var id: UUID
            var maybe: UUID?
            var list: [UUID?]
            var byName: [String: UUID]
            var byId: [UUID: Int]
        }
        let id = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let text = try Self.ours(Shapes(id: id, maybe: id, list: [nil, id], byName: ["a": id], byId: [id: 1]))
        #expect(!text.contains("E621E1F8"))
        #expect(text.components(separatedBy: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f").count == 6)
    }

    @Test func nonFiniteNumbersAreRefusedNotWritten() {
        #expect(throws: EncodingError.self) { try JSONCoding.encoder.encode(["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONCoding.encoder.encode([Double.infinity]) }
    }
}
