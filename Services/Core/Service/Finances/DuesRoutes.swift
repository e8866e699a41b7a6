import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/communities/{id}/dues`: dues the admins set up and record payments and waivers
/// for, and every member reads (their own standing in each, and each member's per period).
struct DuesRoutes {
    let store: DuesStore
    let writer: DuesWriter

    static let createFields: Set<String> = [
        "name", "description", "amount", "currency", "dueDate", "recurrence", "memberIds",
    ]
    static let editFields: Set<String> = ["name", "description", "amount", "memberIds", "isActive"]

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("dues") { request, context in
            let granted = try context.member(.viewContent)
            let page = try PageRequest(request)
            let dues = try await store.list(
                of: granted.communityId, viewer: granted.userId, timezone: granted.record.settings.timezone,
                page: page)
            return try Response.page(dues, of: page, requestId: context.requestId)
        }

        community.post("dues") { request, context in
            let input = try await Self.input(request, context: context, creating: true)
            let granted = try context.member(.setUpDues)
            let dues = try await writer.create(input, in: granted, request: RequestFacts(request, context))
            return try Response.data(
                dues, status: .created, requestId: context.requestId,
                headers: [
                    .location:
                        "/api/v1/communities/\(granted.communityId.lowercasedString)/dues/\(dues.id.lowercasedString)"
                ])
        }

        community.get("dues/:duesId") { request, context in
            let granted = try context.member(.viewContent)
            let detail = try await store.detail(
                try context.duesId(), in: granted.communityId, viewer: granted.userId,
                timezone: granted.record.settings.timezone, period: try Self.period(request))
            return try Response.data(detail, requestId: context.requestId)
        }

        community.patch("dues/:duesId") { request, context in
            let input = try await Self.input(request, context: context, creating: false)
            let granted = try context.member(.setUpDues)
            let dues = try await writer.edit(
                try context.duesId(), input, in: granted, request: RequestFacts(request, context))
            return try Response.data(dues, requestId: context.requestId)
        }

        community.delete("dues/:duesId") { request, context in
            let granted = try context.member(.setUpDues)
            try await writer.delete(try context.duesId(), in: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.get("dues/:duesId/history") { _, context in
            let granted = try context.member(.viewContent)
            let revisions = try await store.history(
                of: try context.duesId(), in: granted.communityId, viewer: granted.userId)
            return try Response.data(revisions, requestId: context.requestId)
        }

        community.post("dues/:duesId/payments") { request, context in
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["userId", "amount", "method", "note", "period"],
                nullClears: false)
            let userId = reader.id("userId").value
            if reader.fields["userId"] == nil { reader.problems["userId"] = "is required" }
            let amount = reader.amount("amount", required: true)
            let method = reader.choice("method", as: PaymentMethod.self).value
            if reader.fields["method"] == nil { reader.problems["method"] = "is required" }
            let note = reader.text("note", maxLength: FinanceLimits.noteLength).value
            let period = reader.day("period")
            try reader.check()
            let granted = try context.member(.markDuesPaid)
            guard let userId, let amount, let method else { throw APIError.internalError }
            let standing = try await writer.pay(
                try context.duesId(),
                DuesWriter.Payment(userId: userId, amount: amount, method: method, note: note, period: period),
                in: granted, request: RequestFacts(request, context))
            return try Response.data(standing, status: .created, requestId: context.requestId)
        }

        community.post("dues/:duesId/waivers") { request, context in
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["userId", "period", "reason"], nullClears: false)
            let userId = reader.id("userId").value
            if reader.fields["userId"] == nil { reader.problems["userId"] = "is required" }
            let period = reader.day("period")
            let reason = reader.text("reason", maxLength: FinanceLimits.noteLength).value
            try reader.check()
            let granted = try context.member(.markDuesPaid)
            guard let userId else { throw APIError.internalError }
            let standing = try await writer.waive(
                try context.duesId(), user: userId, period: period, reason: reason, in: granted,
                request: RequestFacts(request, context))
            return try Response.data(standing, requestId: context.requestId)
        }

        community.delete("dues/:duesId/waivers/:userId") { request, context in
            let granted = try context.member(.markDuesPaid)
            guard let userId = context.parameters.get("userId", as: UUID.self) else {
                throw FinanceErrors.memberNotFound("userId")
            }
            let standing = try await writer.withdrawWaiver(
                try context.duesId(), user: userId, period: try Self.period(request), in: granted,
                request: RequestFacts(request, context))
            return try Response.data(standing, requestId: context.requestId)
        }
    }

    /// `?period=YYYY-MM-DD`, optional.
    static func period(_ request: Request) throws -> String? {
        guard let raw = request.uri.queryParameters.get("period") else { return nil }
        guard LedgerDay.isValid(raw) else { throw APIError.validation(["period": "must be a date as YYYY-MM-DD"]) }
        return raw
    }

    static func input(
        _ request: Request, context: some RequestContext, creating: Bool
    ) async throws
        -> DuesWriter.Input
    {
        var reader = try await FieldReader.read(
            request, context: context, allowed: creating ? createFields : editFields, nullClears: !creating)
        var input = DuesWriter.Input()
        let name = reader.line("name", maxLength: FinanceLimits.duesNameLength, required: creating)
        if case .clear = name { reader.problems["name"] = "must not be empty" }
        input.name = name.value
        input.description = reader.text("description", maxLength: FinanceLimits.duesDescriptionLength)
        input.amount = reader.amount("amount", required: creating)
        if creating {
            input.currency = reader.currency("currency", required: true)
            input.dueDate = reader.day("dueDate")
            if reader.fields["dueDate"] == nil { reader.problems["dueDate"] = "is required" }
            // Periods are counted from the first due date: one in 2000 or later keeps that short.
            if let day = input.dueDate, day < "2000-01-01" { reader.problems["dueDate"] = "must be in 2000 or later" }
            input.recurrence = reader.choice("recurrence", as: DuesRecurrence.self).value
        } else {
            input.isActive = reader.boolean("isActive")
        }
        switch reader.fields["memberIds"] {
        case nil: break
        case .null:
            if creating {
                reader.problems["memberIds"] = "must be a list of members (leave it out for everyone)"
            } else {
                input.memberIds = .clear
            }
        default:
            if let ids = reader.ids("memberIds", maxCount: 1_000) {
                if ids.isEmpty {
                    reader.problems["memberIds"] = "must name at least one member (leave it out for everyone)"
                }
                input.memberIds = .set(ids)
            }
        }
        if !creating, reader.fields["amount"] == .null { reader.problems["amount"] = "must not be null" }
        try reader.check()
        return input
    }
}
