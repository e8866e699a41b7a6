import Foundation
import Hummingbird
import OrbitCoveCalendar
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/communities/{id}/reminders`: shared care reminders (the dog-care seed). Any member
/// creates and edits one and marks, snoozes or reassigns its occurrences; its creator or an
/// admin deletes it.
struct CareRoutes {
    let store: CareStore
    /// At most this many days of occurrences in one read.
    static let maxDays = 100

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("reminders") { request, context in
            let granted = try context.member(.viewContent)
            let page = try PageRequest(request)
            let reminders = try await store.list(in: granted.communityId, viewer: granted.userId, page: page)
            return try Response.page(reminders, of: page, requestId: context.requestId)
        }

        community.post("reminders") { request, context in
            let granted = try context.member(.createReminder)
            let input = try await CareInput.created(
                request, context: context, today: Self.today(in: granted.record.settings.timezone))
            let reminder = try await store.create(input, granted: granted, request: RequestFacts(request, context))
            return try Response.data(
                reminder, status: .created, requestId: context.requestId,
                headers: [
                    .location:
                        "/api/v1/communities/\(granted.communityId.lowercasedString)/reminders/\(reminder.id.lowercasedString)"
                ])
        }

        community.get("reminders/:reminderId") { _, context in
            let granted = try context.member(.viewContent)
            let reminder = try await store.reminder(
                try context.reminderId(), in: granted.communityId, viewer: granted.userId)
            return try Response.data(reminder, requestId: context.requestId)
        }

        community.patch("reminders/:reminderId") { request, context in
            let granted = try context.member(.editReminder)
            let id = try context.reminderId()
            let patch = try await CareInput.patch(request, context: context)
            let reminder = try await store.update(id, patch, granted: granted, request: RequestFacts(request, context))
            return try Response.data(reminder, requestId: context.requestId)
        }

        community.delete("reminders/:reminderId") { request, context in
            let granted = try context.member(.viewContent)
            try await store.delete(try context.reminderId(), granted: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.get("reminders/:reminderId/occurrences") { request, context in
            let granted = try context.member(.viewContent)
            let id = try context.reminderId()
            let (from, through) = try Self.range(request, today: Self.today(in: granted.record.settings.timezone))
            let occurrences = try await store.occurrences(
                of: id, in: granted.communityId, viewer: granted.userId, from: from, through: through)
            return try Response.data(occurrences, requestId: context.requestId)
        }

        community.patch("reminders/:reminderId/occurrences/:date") { request, context in
            let granted = try context.member(.markReminder)
            let id = try context.reminderId()
            guard let date = context.parameters.get("date"), CivilDate(isoText: date) != nil else {
                throw ReminderErrors.occurrenceNotFound
            }
            let patch = try await CareInput.occurrencePatch(request, context: context)
            let occurrence = try await store.change(
                id, on: date, patch, granted: granted, request: RequestFacts(request, context))
            return try Response.data(occurrence, requestId: context.requestId)
        }
    }

    /// Today on the community's clock, `YYYY-MM-DD`.
    static func today(in zone: String, now: Date = Date()) -> String {
        (CivilDateTime(now, in: TimeZone(identifier: zone) ?? .gmt)?.date.isoText) ?? "1970-01-01"
    }

    /// `from` and `to` (local dates, inclusive; a week back and two ahead by default), at most
    /// ``maxDays`` apart.
    static func range(_ request: Request, today: String) throws -> (String, String) {
        let query = request.uri.queryParameters
        var problems: [String: String] = [:]
        func day(_ key: String, default offset: Int) -> CivilDate? {
            guard let text = query.get(key) else { return CivilDate(isoText: today)?.adding(days: offset) }
            guard let date = CivilDate(isoText: text), (2000...2200).contains(date.year) else {
                problems[key] = "must be a date as YYYY-MM-DD (years 2000 to 2200)"
                return nil
            }
            return date
        }
        let from = day("from", default: -7)
        let through = day("to", default: 14)
        if let from, let through {
            if through < from {
                problems["to"] = "must not be before from"
            } else if through.dayNumber - from.dayNumber >= maxDays {
                problems["to"] = "must be less than \(maxDays) days after from"
            }
        }
        guard problems.isEmpty, let from, let through else { throw APIError.validation(problems) }
        return (from.isoText, through.isoText)
    }
}

extension CommunityRequestContext {
    func reminderId() throws -> UUID {
        guard let id = parameters.get("reminderId", as: UUID.self) else { throw ReminderErrors.reminderNotFound }
        return id
    }
}
