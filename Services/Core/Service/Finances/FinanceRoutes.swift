import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// `/api/v1/communities/{id}/transactions`, `…/balances`, `…/settlements` and a member's
/// payment handles: the shared ledger.
struct FinanceRoutes {
    let store: LedgerStore
    let writer: LedgerWriter
    let export: LedgerExport
    let handles: PaymentHandleStore

    func register(on community: RouterGroup<CommunityRequestContext>) {
        community.get("transactions") { request, context in
            let granted = try context.member(.viewContent)
            let page = try PageRequest(request)
            let filter = try LedgerStore.Filter(request)
            let entries = try await store.transactions(
                of: granted.communityId, viewer: granted.userId, filter: filter, page: page)
            return try Response.page(entries, of: page, requestId: context.requestId)
        }

        community.post("transactions") { request, context in
            let input = try await LedgerInput.expense(request, context: context)
            let granted = try context.member(.addExpense)
            let entry = try await MediaReferences.refusing {
                try await writer.createExpense(input, in: granted, request: RequestFacts(request, context))
            }
            return try Self.created(entry, in: granted, requestId: context.requestId)
        }

        community.get("transactions/export.csv") { request, context in
            let granted = try context.member(.exportLedger)
            return try await export.response(of: granted.communityId, viewer: granted.userId)
        }

        community.get("transactions/:transactionId") { _, context in
            let granted = try context.member(.viewContent)
            let entry = try await store.transaction(
                try context.transactionId(), in: granted.communityId, viewer: granted.userId)
            return try Response.data(entry, requestId: context.requestId)
        }

        community.patch("transactions/:transactionId") { request, context in
            let granted = try context.member(.viewContent)
            let input = try await LedgerInput.edit(request, context: context)
            let transactionId = try context.transactionId()
            let entry = try await MediaReferences.refusing {
                try await writer.edit(transactionId, input, in: granted, request: RequestFacts(request, context))
            }
            return try Response.data(entry, requestId: context.requestId)
        }

        community.delete("transactions/:transactionId") { request, context in
            let granted = try context.member(.viewContent)
            try await writer.delete(try context.transactionId(), in: granted, request: RequestFacts(request, context))
            return Response(status: .noContent)
        }

        community.get("transactions/:transactionId/history") { _, context in
            let granted = try context.member(.viewContent)
            let revisions = try await store.history(
                of: try context.transactionId(), in: granted.communityId, viewer: granted.userId)
            return try Response.data(revisions, requestId: context.requestId)
        }

        community.post("settlements") { request, context in
            let granted = try context.member(.addExpense)
            let input = try await LedgerInput.settlement(request, context: context, caller: granted.userId)
            let entry = try await writer.createSettlement(input, in: granted, request: RequestFacts(request, context))
            return try Self.created(entry, in: granted, requestId: context.requestId)
        }

        community.get("balances") { request, context in
            let granted = try context.member(.viewContent)
            let balances = try await store.balances(
                of: granted.communityId, viewer: granted.userId, currency: try Self.currency(request))
            return try Response.data(balances, requestId: context.requestId)
        }

        community.get("balances/simplified") { request, context in
            let granted = try context.member(.viewContent)
            let settlements = try await store.simplified(
                of: granted.communityId, viewer: granted.userId, currency: try Self.currency(request),
                simplify: granted.record.settings.simplifyDebts)
            return try Response.data(settlements, requestId: context.requestId)
        }

        community.get("members/me/payment-handles") { _, context in
            let granted = try context.member(.viewContent)
            let mine = try await handles.handles(of: granted.userId, in: granted.communityId)
            return try Response.data(mine, requestId: context.requestId)
        }

        community.patch("members/me/payment-handles") { request, context in
            let granted = try context.member(.viewContent)
            var reader = try await FieldReader.read(
                request, context: context, allowed: ["venmo", "paypal"], nullClears: true)
            let venmo = reader.handle("venmo")
            let paypal = reader.handle("paypal")
            try reader.check()
            let mine = try await handles.update(
                venmo: venmo, paypal: paypal, of: granted.userId, in: granted.communityId)
            return try Response.data(mine, requestId: context.requestId)
        }
    }

    static func created(
        _ entry: LedgerTransaction, in granted: CommunityGate.Granted, requestId: String
    ) throws -> Response {
        try Response.data(
            entry, status: .created, requestId: requestId,
            headers: [
                .location:
                    "/api/v1/communities/\(granted.communityId.lowercasedString)/transactions/\(entry.id.lowercasedString)"
            ])
    }

    /// `?currency=`, optional.
    static func currency(_ request: Request) throws -> String? {
        guard let raw = request.uri.queryParameters.get("currency") else { return nil }
        guard Currencies.isKnown(raw) else {
            throw APIError.validation(["currency": "must be an ISO 4217 currency code in capitals"])
        }
        return raw
    }
}

extension FieldReader {
    /// A Venmo or PayPal.me handle: letters, digits, `-` and `_`, without the `@`.
    mutating func handle(_ key: String) -> Change<String> {
        let value = text(key, maxLength: FinanceLimits.handleLength)
        if case .set(let handle) = value,
            !handle.unicodeScalars.allSatisfy({
                ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
            })
        {
            problems[key] = "must hold only letters, digits, - and _ (no @)"
        }
        return value
    }
}

extension CommunityRequestContext {
    func transactionId() throws -> UUID {
        guard let id = parameters.get("transactionId", as: UUID.self) else { throw FinanceErrors.transactionNotFound }
        return id
    }

    func duesId() throws -> UUID {
        guard let id = parameters.get("duesId", as: UUID.self) else { throw FinanceErrors.duesNotFound }
        return id
    }
}
