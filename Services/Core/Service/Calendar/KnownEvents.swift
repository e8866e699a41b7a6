import Foundation
import Synchronization

/// Event rows decoded before, by id and version, so a row read again unchanged is not decoded
/// again: a window read gets the same few hundred rows on every request, and decoding them was
/// a tenth of its time. Every change to a row raises its `sequence` and sets `updated_at` to
/// the moment of the change (the `events_version` trigger), so the same id, sequence and
/// `updated_at` are the same row; a version from a transaction that rolled back is never read
/// again, as the next change gets its own moment. Only rows the database returned are looked
/// up, so it decides, as before, what a reader may see. A change made with the trigger switched
/// off (`session_replication_role = replica`, a restore with `--disable-triggers`) is not seen
/// until the row's next change or a restart.
///
/// The application owns one (``CoreApplication`` makes it and hands it to ``EventRows``), so
/// each test server starts with an empty one.
final class KnownEvents: Sendable {
    /// How many rows the core service remembers.
    static let serviceLimit = 50_000

    private let limit: Int
    private let records = Mutex<[UUID: EventRecord]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    func record(_ id: UUID, sequence: Int, updatedAt: Date) -> EventRecord? {
        guard let known = records.withLock({ $0[id] }), known.sequence == sequence, known.updatedAt == updatedAt
        else { return nil }
        return known
    }

    /// Remembers `record`; past the limit the memory starts over.
    func remember(_ record: EventRecord) {
        records.withLock { records in
            if records.count >= limit, records[record.id] == nil { records.removeAll(keepingCapacity: true) }
            records[record.id] = record
        }
    }
}
