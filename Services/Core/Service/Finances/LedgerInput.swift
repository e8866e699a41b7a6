import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// How an expense is to be split, as sent: a method and the members with what each was asked.
struct SplitRequest: Sendable, Equatable {
    var method: SplitMethod
    var members: [(userId: UUID, share: Int64?)]

    static func == (lhs: SplitRequest, rhs: SplitRequest) -> Bool {
        lhs.method == rhs.method && lhs.members.map(\.userId) == rhs.members.map(\.userId)
            && lhs.members.map(\.share) == rhs.members.map(\.share)
    }
}

/// An expense or settlement body, read strictly: every problem named by its field
/// (`split.members[2].share`), all at once, and nothing stored while any remains. A field
/// absent from a PATCH keeps its value.
struct LedgerInput: Sendable {
    var description: String?
    var totalAmount: Int64?
    var currency: String?
    var paidBy: UUID?
    var paidTo: UUID?
    var category: ExpenseCategory?
    var transactionDate: String?
    var linkedEventId: Change<UUID> = .keep
    var receiptUrl: Change<String> = .keep
    var receiptMediaId: Change<UUID> = .keep
    var split: SplitRequest?
    var method: PaymentMethod?
    /// The fields a PATCH named.
    var present: Set<String> = []
    /// A PATCH emptied the description: a settlement's note may go, an expense's description not.
    var clearsDescription = false

    static let expenseFields: Set<String> = [
        "description", "totalAmount", "currency", "paidBy", "category", "transactionDate", "linkedEventId",
        "receiptUrl", "receiptMediaId", "split",
    ]
    static let settlementFields: Set<String> = [
        "from", "to", "amount", "currency", "method", "note", "transactionDate",
    ]
    /// What a PATCH of a settlement may change (the people and currency are what it is).
    static let settlementEditFields: Set<String> = ["totalAmount", "description", "method", "transactionDate"]

    /// `POST …/transactions`: a new expense.
    static func expense(_ request: Request, context: some RequestContext) async throws -> LedgerInput {
        var reader = try await FieldReader.read(request, context: context, allowed: expenseFields, nullClears: false)
        var input = LedgerInput()
        input.description = reader.text("description", maxLength: FinanceLimits.descriptionLength, required: true).value
        input.totalAmount = reader.amount("totalAmount", required: true)
        input.currency = reader.currency("currency", required: true)
        input.paidBy = reader.id("paidBy").value
        input.category = reader.choice("category", as: ExpenseCategory.self).value
        input.transactionDate = reader.day("transactionDate")
        input.linkedEventId = reader.id("linkedEventId")
        input.receiptUrl = reader.url("receiptUrl")
        input.receiptMediaId = reader.id("receiptMediaId")
        input.split = reader.split("split", required: true)
        try reader.check()
        return input
    }

    /// `PATCH …/transactions/{id}`: an expense's or a settlement's changes, read before the
    /// entry is (so no connection waits on a client's body); ``check(type:)`` then refuses what
    /// the entry's type does not take.
    static func edit(_ request: Request, context: some RequestContext) async throws -> LedgerInput {
        var reader = try await FieldReader.read(
            request, context: context, allowed: expenseFields.union(settlementEditFields), nullClears: true)
        var input = LedgerInput()
        input.present = Set(reader.fields.keys)
        let description = reader.text("description", maxLength: FinanceLimits.descriptionLength)
        input.description = description.value
        if case .clear = description { input.clearsDescription = true }
        input.totalAmount = reader.amount("totalAmount", required: false)
        input.transactionDate = reader.day("transactionDate")
        input.currency = reader.currency("currency", required: false)
        input.paidBy = reader.id("paidBy").value
        input.category = reader.choice("category", as: ExpenseCategory.self).value
        input.linkedEventId = reader.id("linkedEventId")
        input.receiptUrl = reader.url("receiptUrl")
        input.receiptMediaId = reader.id("receiptMediaId")
        input.split = reader.split("split", required: false)
        input.method = reader.choice("method", as: PaymentMethod.self).value
        for key in ["totalAmount", "transactionDate", "currency", "category", "split", "method", "paidBy"]
        where reader.fields[key] == .null {
            reader.problems[key] = "must not be null"
        }
        try reader.check()
        return input
    }

    /// Refuses the fields an entry of `type` does not take (`method` on an expense; the people,
    /// currency and split of a settlement, which are what it is).
    func check(type: TransactionType) throws {
        let allowed = type == .expense ? Self.expenseFields : Self.settlementEditFields
        let refused = present.subtracting(allowed)
        if type == .expense, clearsDescription { throw APIError.validation(["description": "must not be empty"]) }
        guard refused.isEmpty else {
            throw APIError.validation(
                Dictionary(
                    uniqueKeysWithValues: refused.map {
                        ($0, "cannot be changed on \(type == .expense ? "an expense" : "a settlement")")
                    }))
        }
    }

    /// `POST …/settlements`: `from` (the caller if absent) paid `to`.
    static func settlement(_ request: Request, context: some RequestContext, caller: UUID) async throws -> LedgerInput {
        var reader = try await FieldReader.read(request, context: context, allowed: settlementFields, nullClears: false)
        var input = LedgerInput()
        input.paidBy = reader.id("from").value ?? caller
        input.paidTo = reader.id("to").value
        if reader.fields["to"] == nil { reader.problems["to"] = "is required" }
        input.totalAmount = reader.amount("amount", required: true)
        input.currency = reader.currency("currency", required: true)
        input.method = reader.choice("method", as: PaymentMethod.self).value
        if reader.fields["method"] == nil { reader.problems["method"] = "is required" }
        input.description = reader.text("note", maxLength: FinanceLimits.noteLength).value
        input.transactionDate = reader.day("transactionDate")
        if let to = input.paidTo, to == input.paidBy, reader.problems["to"] == nil {
            reader.problems["to"] = "must be someone other than the payer"
        }
        try reader.check()
        return input
    }
}

extension FieldReader {
    /// An amount in minor units: a whole number from 1 to ``FinanceLimits/maxAmount``.
    mutating func amount(_ key: String, required: Bool) -> Int64? {
        switch fields[key] {
        case nil:
            if required { problems[key] = "is required" }
            return nil
        case .number(let value)
        where value.rounded() == value && value >= 1
            && value <= Double(FinanceLimits.maxAmount):
            return Int64(value)
        default:
            problems[key] =
                "must be a whole number of minor units (cents) from 1 to \(FinanceLimits.maxAmount)"
            return nil
        }
    }

    /// An ISO 4217 currency code, as `EUR`.
    mutating func currency(_ key: String, required: Bool) -> String? {
        switch fields[key] {
        case nil:
            if required { problems[key] = "is required" }
            return nil
        case .string(let code) where Currencies.isKnown(code):
            return code
        default:
            problems[key] = "must be an ISO 4217 currency code in capitals, as EUR or USD"
            return nil
        }
    }

    /// A calendar day, `YYYY-MM-DD`, that exists, in the years an event may be (1900 to 2199;
    /// a year 1 or 9999 is a typo, not a ledger's day).
    mutating func day(_ key: String) -> String? {
        switch fields[key] {
        case nil: return nil
        case .string(let text) where LedgerDay.isValid(text) && ("1900-01-01"..."2199-12-31").contains(text):
            return text
        default:
            problems[key] = "must be a date as YYYY-MM-DD, from 1900 to 2199"
            return nil
        }
    }

    /// An expense's split: `{"method": …, "members": [{"userId": …, "share": …}, …]}`, each
    /// member once.
    mutating func split(_ key: String, required: Bool) -> SplitRequest? {
        guard let value = fields[key] else {
            if required { problems[key] = "is required" }
            return nil
        }
        guard case .object(let object) = value else {
            problems[key] = "must be an object with method and members"
            return nil
        }
        var inner = FieldReader(object, allowed: ["method", "members"], nullClears: false)
        let method = inner.choice("method", as: SplitMethod.self).value
        if inner.fields["method"] == nil { inner.problems["method"] = "is required" }
        var members: [(userId: UUID, share: Int64?)] = []
        switch inner.fields["members"] {
        case .array(let items) where (1...FinanceLimits.splitMembers).contains(items.count):
            for (index, item) in items.enumerated() {
                let path = "members[\(index)]"
                guard case .object(let fields) = item else {
                    inner.problems[path] = "must be an object with userId and share"
                    continue
                }
                var member = FieldReader(fields, allowed: ["userId", "share"], nullClears: false)
                let userId = member.id("userId").value
                if member.fields["userId"] == nil { member.problems["userId"] = "is required" }
                var share: Int64?
                switch member.fields["share"] {
                case nil, .null: share = nil
                case .number(let number)
                where number.rounded() == number && number >= 0
                    && number <= Double(FinanceLimits.maxAmount):
                    share = Int64(number)
                default: member.problems["share"] = "must be a whole number from 0"
                }
                for (field, problem) in member.problems { inner.problems["\(path).\(field)"] = problem }
                guard member.problems.isEmpty, let userId else { continue }
                if members.contains(where: { $0.userId == userId }) {
                    inner.problems["\(path).userId"] = "names a member already in the split"
                }
                members.append((userId, share))
            }
        default:
            inner.problems["members"] = "must be a list of 1 to \(FinanceLimits.splitMembers) members"
        }
        for (field, problem) in inner.problems { problems["\(key).\(field)"] = problem }
        guard inner.problems.isEmpty, let method else { return nil }
        return SplitRequest(method: method, members: members)
    }
}

/// Calendar days as the ledger writes them (`YYYY-MM-DD`, the proleptic Gregorian calendar).
enum LedgerDay {
    static func isValid(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            text.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...9999).contains(year), (1...12).contains(month), day >= 1
        else { return false }
        return day <= daysIn(month: month, year: year)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Today in `timezone` (a community's zone; UTC if unknown).
    static func today(in timezone: String, now: Date = Date()) -> String {
        day(of: now, on: clock(of: timezone))
    }

    /// The calendar days fall on in `timezone` (a community's zone; UTC if unknown).
    static func clock(of timezone: String) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: timezone) ?? TimeZone.gmt
        return calendar
    }

    /// The day `instant` falls on, on `clock`.
    static func day(of instant: Date, on clock: Calendar) -> String {
        let parts = clock.dateComponents([.year, .month, .day], from: instant)
        return format(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
    }

    static func format(year: Int, month: Int, day: Int) -> String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }
}
