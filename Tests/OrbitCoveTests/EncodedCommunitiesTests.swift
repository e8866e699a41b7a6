import Foundation
import Hummingbird
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import Testing

/// `GET /communities/{id}` answers with JSON kept per community and role
/// (``EncodedCommunities``): it must be the encoder's own bytes for the record at hand, however
/// the record changed since it was kept, and for the role asking.
@Suite struct EncodedCommunitiesTests {
    @Test(arguments: 0..<30) func keptJSONIsAlwaysTheEncodersForTheRecordAtHand(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let kept = EncodedCommunities()
        var record = try Self.record()
        for _ in 0..<12 {
            let role: MemberRole = random.next() % 2 == 0 ? .admin : .member
            let json = try kept.json(of: record, role: role)
            #expect(Array(buffer: json) == (try JSONCoding.encoder.encodeBytes(record.community(role: role))))
            // Asked again unchanged: the same bytes (kept).
            #expect(Array(buffer: try kept.json(of: record, role: role)) == Array(buffer: json))
            Self.change(&record, &random)
        }
        #expect(kept.count <= 2)
    }

    /// The response around the kept JSON is the one the encoder writes for the envelope.
    @Test func theResponseIsTheEncodersEnvelope() throws {
        let record = try Self.record()
        let meta = ResponseMeta(timestamp: Date(timeIntervalSince1970: 1_800_000_000.5), requestId: "req-1")
        let kept = try EncodedCommunities().json(of: record, role: .member)
        let parts = try Response.envelope(parts: kept, meta: meta)
        #expect(
            parts.flatMap { Array(buffer: $0) }
                == (try JSONCoding.encoder.encodeBytes(DataEnvelope(data: record.community(role: .member), meta: meta)))
        )
    }

    @Test func pastItsCapacityItStartsOver() throws {
        let kept = EncodedCommunities(capacity: 4)
        var record = try Self.record()
        for _ in 0..<9 {
            record.id = UUID()
            _ = try kept.json(of: record, role: .member)
        }
        #expect(kept.count >= 1 && kept.count <= 4)
    }

    static func record() throws -> CommunityRecord {
        let text = """
            {"id":"\(UUID().lowercasedString)","name":"Otters","description":"Swim club","iconUrl":null,
            "iconMediaId":null,"createdBy":"\(UUID().lowercasedString)","memberCount":12,
            "subscriptionStatus":"free","settings":\(String(decoding: try JSONCoding.encoder.encodeBytes(CommunitySettings.default), as: UTF8.self)),
            "createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"2026-11-02T10:00:00.123Z","deletedAt":null,
            "creatorIsAdmin":true}
            """
        return try JSONCoding.decoder.decode(CommunityRecord.self, from: Data(text.utf8))
    }

    /// One field of the record changed, as a write or another member's join would.
    static func change(_ record: inout CommunityRecord, _ random: inout SplitMix64) {
        switch random.next() % 8 {
        case 0: record.name = "Otters \(random.next() % 100)"
        case 1: record.description = random.next() % 2 == 0 ? nil : "About \(random.next())"
        case 2: record.memberCount += 1
        case 3: record.settings.allowMemberPosts.toggle()
        case 4: record.updatedAt = record.updatedAt.addingTimeInterval(0.001)
        case 5: record.iconUrl = "https://example.com/i/\(random.next()).png"
        case 6: record.subscriptionStatus = record.subscriptionStatus == .free ? .active : .free
        default: record.settings.timezone = random.next() % 2 == 0 ? "Europe/Berlin" : "UTC"
        }
    }
}
