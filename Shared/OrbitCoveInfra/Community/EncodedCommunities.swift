import Foundation
import NIOCore
import OrbitCoveModels
import Synchronization

/// The JSON of a community as a member of each role reads it (`GET /communities/{id}`), kept
/// per community and role with the record it was written from. Every client opens with that
/// read, served from the cache, and a community seldom changes: it is written once per change
/// instead of on every read. A record that differs from the kept one in anything is written
/// again, so what goes out is always what the encoder writes for the record at hand.
package final class EncodedCommunities: Sendable {
    private struct Key: Hashable {
        var id: UUID
        var role: MemberRole
    }

    private struct Entry {
        var record: CommunityRecord
        var json: ByteBuffer
    }

    package let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    /// A community's JSON is a few kilobytes at most (a description of 2,000 characters).
    package init(capacity: Int = 1024) { self.capacity = capacity }

    /// ``CommunityRecord/community(role:)`` as JSON, for ``Response/data(json:requestId:)``.
    package func json(of record: CommunityRecord, role: MemberRole) throws -> ByteBuffer {
        let key = Key(id: record.id, role: role)
        if let kept = entries.withLock({ $0[key] }), kept.record == record { return kept.json }
        let json = ByteBuffer(bytes: try JSONCoding.encoder.encodeBytes(record.community(role: role)))
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(record: record, json: json)
        }
        return json
    }

    package var count: Int { entries.withLock { $0.count } }
}
