import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/communities/{id}/events`: the window read, events and instances, RSVPs and
/// attendance. An instance of a series is named by the series' id and `recurrenceId`.
struct EventRoutes {
    let store: EventStore
    let editor: EventEditor
    let answers: RSVPStore
    let feeds: CalendarFeedStore

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("events") { request, context in
            let granted = try context.member(.viewContent)
            let window = try Self.window(request)
            let instances = try await store.window(window, in: granted.communityId, viewer: granted.userId)
            return try Response.data(json: instances, requestId: context.requestId)
        }

        community.post("events") { request, context in
            let granted = try context.member(.createEvent)
            let input = try await EventInput.read(request, context: context, creating: true)
            let event = try await editor.create(input, in: granted, request: RequestFacts(request, context))
            return try Response.data(
                event, status: .created, requestId: context.requestId,
                headers: [
                    .location:
                        "/api/v1/communities/\(granted.communityId.lowercasedString)/events/\(event.id.lowercasedString)"
                ])
        }

        // The seed's feed for the signed-in caller (calendar apps use the tokenized feed instead).
        community.get("events/ics") { request, context in
            let granted = try context.member(.viewContent)
            return try await CalendarFeedRoutes.feed(
                feeds, user: granted.userId, community: granted.communityId, request: request)
        }

        community.get("events/:eventId") { request, context in
            let granted = try context.member(.viewContent)
            let event = try await store.event(
                try context.eventId(), recurrenceId: try Self.recurrenceId(request), in: granted.communityId,
                viewer: granted.userId)
            return try Response.data(event, requestId: context.requestId)
        }

        community.patch("events/:eventId") { request, context in
            let granted = try context.member(.viewContent)
            let input = try await EventInput.read(request, context: context, creating: false)
            let event = try await editor.edit(
                try context.eventId(), recurrenceId: try Self.recurrenceId(request), scope: try Self.scope(request),
                input: input, granted: granted, request: RequestFacts(request, context))
            return try Response.data(event, requestId: context.requestId)
        }

        community.delete("events/:eventId") { request, context in
            let granted = try context.member(.viewContent)
            try await editor.delete(
                try context.eventId(), recurrenceId: try Self.recurrenceId(request), scope: try Self.scope(request),
                granted: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.post("events/:eventId/rsvp") { request, context in
            let granted = try context.member(.viewContent)
            let answer = try await Self.answer(request, context: context)
            let rsvp = try await answers.answer(
                answer, to: try context.eventId(), granted: granted, request: RequestFacts(request, context))
            return try Response.data(rsvp, requestId: context.requestId)
        }

        community.get("events/:eventId/attendance") { request, context in
            let granted = try context.member(.viewContent)
            let attendance = try await answers.attendance(
                of: try context.eventId(), recurrenceId: try Self.recurrenceId(request), granted: granted)
            return try Response.data(attendance, requestId: context.requestId)
        }
    }

    /// `from` and `to`: both required, in order, at most 400 days apart. Each is taken to the
    /// nearest microsecond, as PostgreSQL keeps times, before anything is checked, so the
    /// statements and the instances made here compare the same bounds.
    static func window(_ request: Request) throws -> Range<Date> {
        let query = request.uri.queryParameters
        var problems: [String: String] = [:]
        func instant(_ name: String) -> Date? {
            guard let text = query.get(name) else {
                problems[name] = "is required (an ISO 8601 date-time with an offset)"
                return nil
            }
            // The window's end is exclusive: it may be the calendar's end itself. The parser
            // gives the microsecond already; `ExactTimestamp` spells it as the driver reads rows'
            // times back (counted from 2000, not 2001), so bounds and rows compare as equal when
            // they are, and kept windows (`KnownWindows`) are keyed alike.
            guard let date = JSONCoding.parseTimestamp(text).map({ ExactTimestamp($0).date }),
                EventInput.supported.contains(date) || (name == "to" && date == EventInput.supported.upperBound)
            else {
                problems[name] =
                    "must be an ISO 8601 date-time with an offset, from 1900-01-01T00:00:00Z to 2200-01-01T00:00:00Z"
                return nil
            }
            return date
        }
        let from = instant("from")
        let to = instant("to")
        if let from, let to {
            if to <= from { problems["to"] = "must be after from" }
            if to.timeIntervalSince(from) > EventStore.longestWindow {
                problems["to"] = "must be at most 400 days after from"
            }
        }
        guard problems.isEmpty, let from, let to else { throw APIError.validation(problems) }
        return from..<to
    }

    static func recurrenceId(_ request: Request) throws -> Date? {
        guard let text = request.uri.queryParameters.get("recurrenceId") else { return nil }
        guard let date = JSONCoding.parseTimestamp(text), EventInput.supported.contains(date) else {
            throw APIError.validation(["recurrenceId": "must be an instance's original start, ISO 8601"])
        }
        return date
    }

    static func scope(_ request: Request) throws -> EditScope? {
        guard let text = request.uri.queryParameters.get("scope") else { return nil }
        guard let scope = EditScope(rawValue: text) else {
            throw APIError.validation(["scope": "must be one of this, following, all"])
        }
        return scope
    }

    static func answer(_ request: Request, context: CommunityRequestContext) async throws -> RSVPStore.Answer {
        var reader = try await FieldReader.read(
            request, context: context, allowed: ["status", "plusOnes", "note", "familyMemberId", "recurrenceId"],
            nullClears: false)
        let status = reader.choice("status", as: RSVPStatus.self)
        if case .keep = status, reader.problems["status"] == nil { reader.problems["status"] = "is required" }
        let plusOnes = reader.integer("plusOnes", in: 0...20)
        let note = reader.text("note", maxLength: 500)
        let recurrenceId = reader.instant("recurrenceId")
        if let date = recurrenceId.value, !EventInput.supported.contains(date) {
            reader.problems["recurrenceId"] = "must be an instance's original start, in the years 1900 to 2199 (UTC)"
        }
        var familyMemberId: UUID?
        switch reader.fields["familyMemberId"] {
        case nil: break
        case .string(let text) where UUID(uuidString: text) != nil: familyMemberId = UUID(uuidString: text)
        default: reader.problems["familyMemberId"] = "must be the id of one of your family members"
        }
        try reader.check()
        // A no brings nobody along.
        return RSVPStore.Answer(
            status: status.value ?? .no, plusOnes: status.value == .no ? 0 : plusOnes.value ?? 0, note: note.value,
            familyMemberId: familyMemberId,
            recurrenceId: recurrenceId.value)
    }
}

extension CommunityRequestContext {
    func eventId() throws -> UUID {
        guard let id = parameters.get("eventId", as: UUID.self) else { throw CalendarErrors.eventNotFound }
        return id
    }
}
