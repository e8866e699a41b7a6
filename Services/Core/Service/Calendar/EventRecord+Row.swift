import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

extension EventRecord {
    /// The columns ``init(_:known:)`` reads, from `events e` (a constant, for `\(unescaped:)`).
    static let columns = """
        e.id, e.sequence, e.updated_at, e.community_id, e.created_by, e.title, e.description, e.starts_at, e.ends_at,
        coalesce(e.all_day, false), e.time_zone, e.location_name, e.location_lat::float8, e.location_lng::float8,
        e.location_address, e.category::text, e.attachments::text, e.rsvp_deadline, e.capacity, e.recurrence_rule,
        e.exception_dates, e.recurrence_parent_id, e.recurrence_id, e.overridden_fields, e.cancelled_at IS NOT NULL,
        e.created_at
        """

    /// The row, or the same version of it decoded before and remembered in `known` (nil: none,
    /// decoded every time).
    init(_ row: PostgresRow, known: KnownEvents?) throws {
        if let known {
            self = try known.event(row).record
            return
        }
        var cells = RowReader(row)
        let (id, sequence, updatedAt): (UUID, Int, Date) = (try cells.next(), try cells.next(), try cells.next())
        try self.init(rest: &cells, id: id, sequence: sequence, updatedAt: updatedAt)
    }

    /// The row from its fourth column on, the first three read.
    init(rest cells: inout RowReader, id: UUID, sequence: Int, updatedAt: Date) throws {
        self.id = id
        self.sequence = sequence
        self.updatedAt = updatedAt
        communityId = try cells.next()
        createdBy = try cells.next()
        title = try cells.next()
        description = try cells.next()
        startsAt = try cells.next()
        endsAt = try cells.next()
        allDay = try cells.next()
        timeZone = try cells.next()
        locationName = try cells.next()
        locationLat = try cells.next()
        locationLng = try cells.next()
        locationAddress = try cells.next()
        let category: String? = try cells.next()
        self.category = EventCategory(rawValue: category ?? "") ?? .other
        // Most events have none: no decoder for those.
        let attachmentText: String? = try cells.next()
        if let attachmentText, attachmentText != "[]" {
            attachments = (try? JSONCoding.decoder.decode([JSONValue].self, from: Data(attachmentText.utf8))) ?? []
        } else {
            attachments = []
        }
        rsvpDeadline = try cells.next()
        capacity = try cells.next()
        recurrenceRule = try cells.next()
        exceptionDates = try cells.next()
        parentId = try cells.next()
        recurrenceId = try cells.next()
        let overridden: [String] = try cells.next()
        overriddenFields = Set(overridden.compactMap(EventField.init(rawValue:)))
        cancelled = try cells.next()
        createdAt = try cells.next()
    }
}
