import Foundation
import Hummingbird
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels

/// A care reminder's body, read strictly: every bad field named in `VALIDATION_FAILED`, a rule
/// the reminders do not support `422 UNSUPPORTED_RECURRENCE` on its field.
enum CareInput {
    static let fields: Set = [
        "title", "notes", "recurrenceRule", "timeOfDay", "startsOn", "assigneeId", "escalateAfterMinutes",
    ]
    /// An escalation waits at most a week.
    static let escalation = 1...10_080
    /// A snooze lasts at most a week.
    static let maxSnooze: TimeInterval = 7 * 86_400

    struct Created: Sendable {
        var title: String
        var notes: String?
        var recurrenceRule: String
        var timeOfDay: String
        var startsOn: String
        var assigneeId: UUID?
        var escalateAfterMinutes: Int?
    }

    struct Patch: Sendable {
        var title: String?
        var notes: Change<String> = .keep
        var recurrenceRule: String?
        var timeOfDay: String?
        var startsOn: String?
        var assigneeId: Change<UUID> = .keep
        var escalateAfterMinutes: Change<Int> = .keep
    }

    struct OccurrencePatch: Sendable {
        var status: CareOccurrenceStatus?
        var snoozeUntil: Date?
        var assigneeId: Change<UUID> = .keep
    }

    static func created(_ request: Request, context: some RequestContext, today: String) async throws -> Created {
        var reader = try await FieldReader.read(request, context: context, allowed: fields, nullClears: false)
        let title = reader.line("title", maxLength: 200, required: true).value
        let notes = reader.text("notes", maxLength: 2_000).value
        let timeOfDay = clock(&reader, "timeOfDay", required: true)
        let startsOn = day(&reader, "startsOn") ?? today
        let assignee = reader.id("assigneeId").value
        let escalation = reader.integer("escalateAfterMinutes", in: escalation).value
        let rule = try self.rule(&reader, required: true)
        try reader.check()
        guard let title, let timeOfDay, let rule else { throw APIError.validation(reader.problems) }
        return Created(
            title: title, notes: notes, recurrenceRule: rule, timeOfDay: timeOfDay, startsOn: startsOn,
            assigneeId: assignee, escalateAfterMinutes: escalation)
    }

    static func patch(_ request: Request, context: some RequestContext) async throws -> Patch {
        var reader = try await FieldReader.read(request, context: context, allowed: fields)
        var patch = Patch()
        switch reader.line("title", maxLength: 200) {
        case .set(let title): patch.title = title
        case .clear: reader.problems["title"] = "must not be empty"
        case .keep: break
        }
        patch.notes = reader.text("notes", maxLength: 2_000)
        patch.timeOfDay = clock(&reader, "timeOfDay", required: false)
        patch.startsOn = day(&reader, "startsOn")
        patch.assigneeId = reader.id("assigneeId")
        patch.escalateAfterMinutes = reader.integer("escalateAfterMinutes", in: escalation)
        patch.recurrenceRule = try rule(&reader, required: false)
        for key in ["timeOfDay", "recurrenceRule"] where reader.fields[key] == .null {
            reader.problems[key] = "must not be null"
        }
        try reader.check()
        return patch
    }

    static func occurrencePatch(
        _ request: Request, context: some RequestContext, now: Date = Date()
    ) async throws -> OccurrencePatch {
        var reader = try await FieldReader.read(
            request, context: context, allowed: ["status", "snoozeUntil", "assigneeId"])
        var patch = OccurrencePatch()
        switch reader.choice("status", as: CareOccurrenceStatus.self) {
        case .set(.pending): reader.problems["status"] = "must be done or skipped: a marked occurrence stays marked"
        case .set(let status): patch.status = status
        case .clear: reader.problems["status"] = "must be done or skipped"
        case .keep: break
        }
        switch reader.instant("snoozeUntil") {
        // Leaves room for the clocks of this process and the database (whose guard checks too).
        case .set(let until)
        where until >= now.addingTimeInterval(60) && until <= now.addingTimeInterval(maxSnooze - 60):
            patch.snoozeUntil = until
        case .set: reader.problems["snoozeUntil"] = "must be a minute to 7 days ahead"
        case .clear: reader.problems["snoozeUntil"] = "must be a date-time"
        case .keep: break
        }
        patch.assigneeId = reader.id("assigneeId")
        if reader.problems.isEmpty, reader.fields.isEmpty {
            reader.problems["status"] = "a change needs status, snoozeUntil or assigneeId"
        }
        if patch.status != nil, patch.snoozeUntil != nil {
            reader.problems["snoozeUntil"] = "cannot be set while marking the occurrence"
        }
        try reader.check()
        return patch
    }

    /// A rule the calendar's engine expands, daily at most (a time of day is once a day).
    private static func rule(_ reader: inout FieldReader, required: Bool) throws -> String? {
        switch reader.text("recurrenceRule", maxLength: 460, required: required) {
        case .clear:
            // An empty rule, where a null is refused as any other.
            if reader.fields["recurrenceRule"] != .null { reader.problems["recurrenceRule"] = "must not be empty" }
            return nil
        case .set(let text):
            let rule: RecurrenceRule
            do {
                rule = try RecurrenceRule(parsing: text)
            } catch {
                throw ReminderErrors.unsupported("recurrenceRule", error.message)
            }
            return rule.rfc5545Value
        case .keep: return nil
        }
    }

    private static func clock(_ reader: inout FieldReader, _ key: String, required: Bool) -> String? {
        switch reader.fields[key] {
        case nil:
            if required { reader.problems[key] = "is required" }
            return nil
        case .string(let text) where CareSchedule.timeOfDay(text) != nil: return text
        default:
            reader.problems[key] = "must be a time of day as HH:MM (00:00 to 23:59)"
            return nil
        }
    }

    private static func day(_ reader: inout FieldReader, _ key: String) -> String? {
        switch reader.fields[key] {
        case nil: return nil
        case .null:
            reader.problems[key] = "must not be null"
            return nil
        case .string(let text) where CivilDate(isoText: text).map { (2000...2200).contains($0.year) } == true:
            return text
        default:
            reader.problems[key] = "must be a date as YYYY-MM-DD (years 2000 to 2200)"
            return nil
        }
    }
}
