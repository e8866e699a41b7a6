import Foundation
import OrbitCoveModels
import Testing

@testable import CoreService

/// Splitting expenses, settling nets and writing amounts: pinned cases, and properties checked
/// over seeded random inputs (`SplitMix64`) so that a failure reproduces.
@Suite struct FinanceMathTests {
    typealias Transfer = DebtSimplification.Transfer

    // MARK: Splits

    @Test func equalSplitsGiveTheLeftoverToTheFirstListed() throws {
        let members = (0..<3).map { _ in (userId: UUID(), share: Int64?.none) }
        let splits = try SplitAllocation.allocate(total: 100, method: .equal, members: members).get()
        #expect(splits.map(\.amount) == [34, 33, 33])
        #expect(splits.map(\.userId) == members.map(\.userId))
        #expect(splits.allSatisfy { $0.share == nil })
    }

    @Test func exactAmountsMustAddUpAndTheProblemSaysByHowMuch() throws {
        let (ada, bo) = (UUID(), UUID())
        let over = SplitAllocation.allocate(total: 1_000, method: .exact, members: [(ada, 600), (bo, 450)])
        #expect(
            over.failure
                == SplitProblem(field: "split", message: "the amounts add up to 1050, 50 more than the total 1000"))
        let under = SplitAllocation.allocate(total: 1_000, method: .exact, members: [(ada, 600), (bo, 300)])
        #expect(under.failure?.message == "the amounts add up to 900, 100 less than the total 1000")
        let splits = try SplitAllocation.allocate(total: 1_000, method: .exact, members: [(ada, 1_000), (bo, 0)]).get()
        #expect(
            splits == [
                LedgerSplit(userId: ada, amount: 1_000, share: 1_000), LedgerSplit(userId: bo, amount: 0, share: 0),
            ])
    }

    @Test func percentagesAreBasisPointsAddingUpToAWhole() throws {
        let members = [Int64(3_333), 3_333, 3_334].map { (userId: UUID(), share: Int64?.some($0)) }
        let splits = try SplitAllocation.allocate(total: 100, method: .percentages, members: members).get()
        #expect(splits.map(\.amount) == [33, 33, 34])
        #expect(splits.map(\.share) == [3_333, 3_333, 3_334])
        let short = [Int64(5_000), 4_900].map { (userId: UUID(), share: Int64?.some($0)) }
        #expect(
            SplitAllocation.allocate(total: 100, method: .percentages, members: short).failure?.message
                == "the percentages add up to 9900 basis points; they must add up to 10000 (100 %)")
    }

    @Test func sharesSplitInProportion() throws {
        let members = [Int64(1), 2, 3].map { (userId: UUID(), share: Int64?.some($0)) }
        let splits = try SplitAllocation.allocate(total: 100, method: .shares, members: members).get()
        // 16.67, 33.33 and 50: the first lost most to the floor.
        #expect(splits.map(\.amount) == [17, 33, 50])
        #expect(splits.map(\.share) == [1, 2, 3])
    }

    @Test func badSplitsNameTheirField() {
        let (ada, bo) = (UUID(), UUID())
        func problem(_ method: SplitMethod, _ members: [(userId: UUID, share: Int64?)]) -> String? {
            SplitAllocation.allocate(total: 100, method: method, members: members).failure?.field
        }
        #expect(problem(.equal, []) == "split.members")
        #expect(problem(.equal, [(ada, nil), (bo, nil), (ada, nil)]) == "split.members[2].userId")
        #expect(problem(.equal, [(ada, nil), (bo, 1)]) == "split.members[1].share")
        #expect(problem(.shares, [(ada, 1), (bo, 0)]) == "split.members[1].share")
        #expect(problem(.shares, [(ada, FinanceLimits.maxShares + 1)]) == "split.members[0].share")
        #expect(problem(.percentages, [(ada, 10_001), (bo, nil)]) == "split.members[0].share")
        #expect(problem(.exact, [(ada, 100), (bo, nil)]) == "split.members[1].share")
        #expect(problem(.exact, [(ada, -1), (bo, 101)]) == "split.members[0].share")
    }

    /// Every split adds up to the total, every part is within one unit of its exact quotient,
    /// and the leftover units went to the largest remainders, earlier members first on ties.
    @Test func randomSplitsAddUpAndFavourTheLargestRemainders() throws {
        var random = SplitMix64(seed: 4_217)
        for _ in 0..<2_000 {
            // Mostly few members and small totals, where ties and leftovers are common.
            let count = Int.random(in: 1...(Bool.random(using: &random) ? 12 : 200), using: &random)
            let largest = Bool.random(using: &random) ? 1_000 : FinanceLimits.maxAmount
            let total = Int64.random(in: 0...largest, using: &random)
            let method = SplitMethod.allCases.randomElement(using: &random) ?? .equal
            let shares: [Int64?] =
                switch method {
                case .equal: Array(repeating: nil, count: count)
                case .exact: Self.cut(total, into: count, using: &random)
                case .percentages: Self.cut(FinanceLimits.wholePercent, into: count, using: &random)
                case .shares:
                    (0..<count).map { _ in
                        Int64.random(
                            in: 1...(Bool.random(using: &random) ? 3 : FinanceLimits.maxShares), using: &random)
                    }
                }
            let members = shares.map { (userId: UUID(), share: $0) }
            let splits = try SplitAllocation.allocate(total: total, method: method, members: members).get()
            #expect(splits.reduce(0) { $0 + $1.amount } == total)
            #expect(splits.map(\.share) == shares)
            guard method != .exact else {
                #expect(splits.map(\.amount) == shares.map { $0 ?? -1 })
                continue
            }
            let weights = shares.map { $0 ?? 1 }
            let sum = Int128(weights.reduce(0, +))
            let exact = weights.map { (Int128(total) * Int128($0)).quotientAndRemainder(dividingBy: sum) }
            let extra = zip(splits, exact).map { Int128($0.amount) - $1.quotient }
            #expect(extra.allSatisfy { $0 == 0 || $0 == 1 })
            let given = extra.indices.filter { extra[$0] == 1 }
            let passed = extra.indices.filter { extra[$0] == 0 }
            let fair = given.allSatisfy { won in
                passed.allSatisfy { lost in
                    let (more, less) = (exact[won].remainder, exact[lost].remainder)
                    return more > less || (more == less && won < lost)
                }
            }
            #expect(fair, "\(method) of \(total) by \(weights)")
        }
    }

    /// `whole` cut into `count` random non-negative parts.
    static func cut(_ whole: Int64, into count: Int, using random: inout SplitMix64) -> [Int64] {
        let marks = ((1..<count).map { _ in Int64.random(in: 0...whole, using: &random) } + [0, whole]).sorted()
        return zip(marks.dropFirst(), marks).map { $0 - $1 }
    }

    // MARK: Settling

    @Test func theMinimumFindsGroupsThatSettleAmongThemselves() {
        let people = (0..<6).map { _ in UUID() }
        let nets = Dictionary(uniqueKeysWithValues: zip(people, [-10, -3, -3, 6, 5, 5] as [Int64]))
        #expect(DebtSimplification.greedy(nets).count == 5)
        let minimum = DebtSimplification.minimum(nets)
        #expect(minimum.count == 4)
        #expect(Self.applying(minimum, to: nets).values.allSatisfy { $0 == 0 })
        #expect(DebtSimplification.settle(nets).method == "minimum")
        #expect(DebtSimplification.settle(nets).transfers == minimum)
    }

    /// Small amounts, so zero-sum subgroups are common; the count is checked against an
    /// independent brute force.
    @Test func theMinimumIsMinimalAndSettlesEveryone() {
        var random = SplitMix64(seed: 2_024)
        for _ in 0..<1_500 {
            let nets = Self.randomNets(count: Int.random(in: 2...9, using: &random), spread: 6, using: &random)
            let minimum = DebtSimplification.minimum(nets)
            let nonZero = nets.values.filter { $0 != 0 }
            #expect(minimum.allSatisfy { $0.amount > 0 && $0.from != $0.to })
            #expect(Self.applying(minimum, to: nets).values.allSatisfy { $0 == 0 }, "\(nets)")
            #expect(minimum.count == nonZero.count - Self.mostZeroSumGroups(nonZero), "\(nets)")
            #expect(minimum.count <= DebtSimplification.greedy(nets).count)
            // The same plan whatever order the dictionary holds the members in.
            let reordered = Dictionary(uniqueKeysWithValues: nets.shuffled(using: &random))
            #expect(DebtSimplification.minimum(reordered) == minimum)
        }
    }

    @Test func manyMembersAreSettledGreedily() {
        var random = SplitMix64(seed: 25)
        let nets = Self.randomNets(count: 25, spread: 10_000, using: &random)
        let (transfers, method) = DebtSimplification.settle(nets)
        #expect(method == "greedy")
        #expect(Self.applying(transfers, to: nets).values.allSatisfy { $0 == 0 })
        #expect(transfers.count < nets.count)
    }

    @Test func twentyMembersAreSettledExactly() {
        var random = SplitMix64(seed: 20)
        let nets = Self.randomNets(count: 20, spread: 40, using: &random)
        let (transfers, method) = DebtSimplification.settle(nets)
        #expect(method == "minimum")
        #expect(Self.applying(transfers, to: nets).values.allSatisfy { $0 == 0 })
        #expect(transfers.count <= DebtSimplification.greedy(nets).count)
    }

    @Test func netsThatDoNotBalanceDoNotTrap() {
        let nets = [UUID(): Int64(-7), UUID(): 3, UUID(): 2]
        #expect(DebtSimplification.settle(nets).transfers.reduce(0) { $0 + $1.amount } == 5)
        #expect(DebtSimplification.greedy([UUID(): .min, UUID(): .max]).count == 1)
    }

    /// `count` random nets, all but the last non-zero and within `spread`, the last balancing the rest.
    static func randomNets(count: Int, spread: Int64, using random: inout SplitMix64) -> [UUID: Int64] {
        var values = (1..<count).map { _ in
            Int64.random(in: 1...spread, using: &random) * (Bool.random(using: &random) ? 1 : -1)
        }
        values.append(-values.reduce(0, +))
        return Dictionary(uniqueKeysWithValues: values.map { (Self.id(using: &random), $0) })
    }

    /// The most disjoint zero-sum groups `nets` (which sum to zero) splits into: the first net's
    /// group is tried with every subset of the rest.
    static func mostZeroSumGroups(_ nets: [Int64]) -> Int {
        guard let first = nets.first else { return 0 }
        let rest = Array(nets.dropFirst())
        var most = 0
        for mask in 0..<(1 << rest.count) {
            let inGroup = rest.indices.filter { mask & (1 << $0) != 0 }
            guard inGroup.reduce(first, { $0 + rest[$1] }) == 0 else { continue }
            let others = rest.indices.filter { mask & (1 << $0) == 0 }.map { rest[$0] }
            most = max(most, 1 + mostZeroSumGroups(others))
        }
        return most
    }

    static func applying(_ transfers: [Transfer], to nets: [UUID: Int64]) -> [UUID: Int64] {
        var balances = nets
        for transfer in transfers {
            balances[transfer.from, default: 0] += transfer.amount
            balances[transfer.to, default: 0] -= transfer.amount
        }
        return balances
    }

    // MARK: Explanations

    @Test func aPayerExplainsWithWhatTheyOweThePayeeFirst() {
        let (payer, payee, other) = (UUID(), UUID(), UUID())
        let (lunch, taxi, hotel) = (UUID(), UUID(), UUID())
        let edges = [
            DebtSimplification.Edge(transactionId: lunch, debtor: payer, creditor: other, amount: 30),
            DebtSimplification.Edge(transactionId: taxi, debtor: payer, creditor: payee, amount: 20),
            DebtSimplification.Edge(transactionId: hotel, debtor: payer, creditor: payee, amount: 50),
            DebtSimplification.Edge(transactionId: hotel, debtor: other, creditor: payee, amount: 50),
        ]
        let transfers = [Transfer(from: payer, to: payee, amount: 60), Transfer(from: payer, to: payee, amount: 30)]
        let reasons = DebtSimplification.explain(transfers, edges: edges)
        #expect(reasons[0].payerSide.map(\.transactionId) == [taxi, hotel])
        #expect(reasons[0].payerSide.map(\.amount) == [20, 40])
        #expect(reasons[0].payeeSide.map(\.transactionId) == [taxi, hotel])
        #expect(reasons[0].payeeSide.map(\.amount) == [20, 40])
        // The second transfer draws on what the first left: the rest of the hotel, then lunch.
        #expect(reasons[1].payerSide.map(\.transactionId) == [hotel, lunch])
        #expect(reasons[1].payerSide.map(\.amount) == [10, 20])
        // The hotel, owed by the payer and by the other, is one reason of 30.
        #expect(reasons[1].payeeSide.map(\.transactionId) == [hotel])
        #expect(reasons[1].payeeSide.map(\.amount) == [30])
    }

    /// Random expenses among a few members: each side of each transfer adds up to it, draws only
    /// on the right members' rows, and no row is drawn on past its amount.
    @Test func everyTransferIsExplainedInFull() {
        var random = SplitMix64(seed: 1_337)
        for _ in 0..<400 {
            let people = (0..<Int.random(in: 2...8, using: &random)).map { _ in Self.id(using: &random) }
            var edges: [DebtSimplification.Edge] = []
            for _ in 0..<Int.random(in: 1...15, using: &random) {
                let transaction = Self.id(using: &random)
                let payer = people.randomElement(using: &random) ?? people[0]
                for debtor in people where debtor != payer && Bool.random(using: &random) {
                    let amount = Int64.random(in: 1...50, using: &random)
                    edges.append(.init(transactionId: transaction, debtor: debtor, creditor: payer, amount: amount))
                }
            }
            edges.reverse()  // newest first
            var nets: [UUID: Int64] = [:]
            for edge in edges {
                nets[edge.creditor, default: 0] += edge.amount
                nets[edge.debtor, default: 0] -= edge.amount
            }
            let transfers = DebtSimplification.settle(nets, exactLimit: Int.random(in: 0...8, using: &random)).transfers
            let reasons = DebtSimplification.explain(transfers, edges: edges)
            #expect(reasons.count == transfers.count)
            var drawn: [String: Int64] = [:]  // per transaction and debtor, or creditor
            for (transfer, reason) in zip(transfers, reasons) {
                #expect(reason.payerSide.reduce(0) { $0 + $1.amount } == transfer.amount)
                #expect(reason.payeeSide.reduce(0) { $0 + $1.amount } == transfer.amount)
                #expect(Set(reason.payerSide.map(\.transactionId)).count == reason.payerSide.count)
                #expect(Set(reason.payeeSide.map(\.transactionId)).count == reason.payeeSide.count)
                for portion in reason.payerSide {
                    #expect(edges.contains { $0.transactionId == portion.transactionId && $0.debtor == transfer.from })
                    drawn["debt \(portion.transactionId) \(transfer.from)", default: 0] += portion.amount
                }
                for portion in reason.payeeSide {
                    #expect(edges.contains { $0.transactionId == portion.transactionId && $0.creditor == transfer.to })
                    drawn["credit \(portion.transactionId) \(transfer.to)", default: 0] += portion.amount
                }
            }
            var available: [String: Int64] = [:]
            for edge in edges {
                available["debt \(edge.transactionId) \(edge.debtor)", default: 0] += edge.amount
                available["credit \(edge.transactionId) \(edge.creditor)", default: 0] += edge.amount
            }
            #expect(drawn.allSatisfy { $0.value <= available[$0.key] ?? 0 })
        }
    }

    static func id(using random: inout SplitMix64) -> UUID {
        var bytes = (random.next(), random.next())
        return withUnsafeBytes(of: &bytes) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    // MARK: Currencies

    @Test func amountsAreWrittenWithTheirCurrencysPlaces() {
        #expect(Currencies.decimal(1_234, currency: "USD") == "12.34")
        #expect(Currencies.decimal(-5, currency: "USD") == "-0.05")
        #expect(Currencies.decimal(0, currency: "EUR") == "0.00")
        #expect(Currencies.decimal(100, currency: "EUR") == "1.00")
        #expect(Currencies.decimal(1_234, currency: "JPY") == "1234")
        #expect(Currencies.decimal(-1_234, currency: "JPY") == "-1234")
        #expect(Currencies.decimal(1_234, currency: "BHD") == "1.234")
        #expect(Currencies.decimal(7, currency: "CLF") == "0.0007")
        #expect(Currencies.decimal(.min, currency: "USD") == "-92233720368547758.08")
        #expect(Currencies.decimal(.max, currency: "KWD") == "9223372036854775.807")
        #expect(Currencies.isKnown("EUR") && Currencies.isKnown("XCG") && Currencies.isKnown("UYW"))
        #expect(!Currencies.isKnown("eur") && !Currencies.isKnown("XAU") && !Currencies.isKnown("XTS"))
        #expect(Currencies.minorUnits.count > 150)
    }

    @Test func payLinksFollowTheHandlesAndCurrency() {
        let handles = PaymentHandles(venmo: "ada-l", paypal: "AdaL")
        let dollars = Currencies.payLinks(
            handles: handles, amount: 4_250, currency: "USD", note: "Tigers: snacks & gas")
        #expect(dollars.venmo == "https://venmo.com/ada-l?txn=pay&amount=42.50&note=Tigers%3A%20snacks%20%26%20gas")
        #expect(dollars.paypal == "https://www.paypal.me/AdaL/42.50USD")
        let yen = Currencies.payLinks(handles: handles, amount: 1_500, currency: "JPY", note: "")
        #expect(yen == PayLinks(venmo: nil, paypal: "https://www.paypal.me/AdaL/1500JPY"))
        let odd = Currencies.payLinks(
            handles: PaymentHandles(venmo: "a/b?c", paypal: nil), amount: 1, currency: "USD", note: "é")
        #expect(odd == PayLinks(venmo: "https://venmo.com/a%2Fb%3Fc?txn=pay&amount=0.01&note=%C3%A9", paypal: nil))
        #expect(
            Currencies.payLinks(handles: nil, amount: 1, currency: "USD", note: "x")
                == PayLinks(venmo: nil, paypal: nil))
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
