import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO
import Synchronization

/// Event rows decoded before, by id and version, so a row read again unchanged is not decoded
/// again, nor made again into what a window shows of it: a window read gets the same few
/// hundred rows on every request, and decoding them was a tenth of its time, copying them into
/// events and writing their shared fields' JSON about another twelfth (BENCHMARKS.md). Every
/// change to a row raises its `sequence` and sets `updated_at` to the moment of the change (the
/// `events_version` trigger), so the same id, sequence and `updated_at` are the same row; a
/// version from a transaction that rolled back is never read again, as the next change gets its
/// own moment. Only rows the database returned are looked up, so it decides, as before, what a
/// reader may see. A change made with the trigger switched off (`session_replication_role =
/// replica`, a restore with `--disable-triggers`) is not seen until the row's next change or a
/// restart. It holds at most `limit` rows, however large they are: an event's text is bounded
/// (10,000 characters a field), not the memory its rows and their JSON take together.
///
/// The application owns one (``CoreApplication`` makes it and hands it to ``EventRows``), so
/// each test server starts with an empty one.
package final class KnownEvents: Sendable {
    /// How many rows the core service remembers.
    static let serviceLimit = 50_000

    private let limit: Int
    private let events = Mutex<[UUID: KnownEvent]>([:])

    package init(limit: Int) {
        self.limit = limit
    }

    /// The row (read from ``EventRecord/columns``), as remembered or decoded now.
    func event(_ row: PostgresRow) throws -> KnownEvent {
        var cells = RowReader(row)
        let (id, sequence, updatedAt): (UUID, Int, Date) = (try cells.next(), try cells.next(), try cells.next())
        if let known = event(id, sequence: sequence, updatedAt: updatedAt) { return known }
        let known = KnownEvent(try EventRecord(rest: &cells, id: id, sequence: sequence, updatedAt: updatedAt))
        events.withLock { events in
            if events.count >= limit, events[id] == nil { events.removeAll(keepingCapacity: true) }
            events[id] = known
        }
        return known
    }

    /// The version `sequence`, `updatedAt` of row `id`, if remembered.
    func event(_ id: UUID, sequence: Int, updatedAt: Date) -> KnownEvent? {
        guard let known = events.withLock({ $0[id] }), known.record.sequence == sequence,
            known.record.updatedAt == updatedAt
        else { return nil }
        return known
    }
}

/// One version of a row, and what a window makes of it, made on a window's first read of this
/// version (so other reads, and rows no window shows, pay nothing for it): a single event's
/// instance (its own event), a series' instances (their template, and the expansion's helper).
/// An override is made per read, from its series (rarely any).
final class KnownEvent: Sendable {
    let record: EventRecord
    private let made = Mutex<WindowParts?>(nil)

    struct WindowParts: Sendable {
        /// A series' instances as clients see them.
        var generated: GeneratedInstances?
        /// The source a window's instances of this row copy: nil for an override.
        var source: WindowSource?
    }

    init(_ record: EventRecord) {
        self.record = record
    }

    /// What a window makes of the row. Two reads at once may both make it: the same parts.
    func windowParts() throws -> WindowParts {
        if let parts = made.withLock({ $0 }) { return parts }
        var parts = WindowParts()
        if record.isSeries {
            let generated = record.generatedInstances
            parts.generated = generated
            parts.source = try WindowSource(generated.template)
        } else if !record.isOverride {
            parts.source = try WindowSource(record.event)
        }
        made.withLock { $0 = parts }
        return parts
    }
}
