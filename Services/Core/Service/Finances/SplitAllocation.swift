import Foundation
import OrbitCoveModels

/// Why a split cannot be made: the request field at fault (`split.members[2].share`, or
/// `split` when only the members together are wrong) and what is wrong with it.
struct SplitProblem: Error, Equatable {
    var field: String
    var message: String
}

/// Cuts an expense's total into whole minor units, one part per member.
///
/// `exact` takes each member's amount as given. The other methods give each member a weight
/// (1 each for `equal`, their basis points, or their shares) and cut by largest remainder
/// (Hamilton's method): each member first gets the floor of `total × weight / Σ weights`; the
/// units the floors leave over (fewer than there are members) then go one each to the members
/// whose exact parts lost the most to the floor. So the parts always add up to the total, and
/// no part is a whole unit or more away from its exact share.
///
/// Equal remainders are broken by the order the members were listed, earlier first: 100 split
/// equally three ways is 34, 33, 33. Listing order is what the caller controls and sees, so the
/// result is reproducible and explainable (no hashing, no randomness).
enum SplitAllocation {
    /// `total` (0 through ``FinanceLimits/maxAmount``) split by `method`. The members must be
    /// the community's (the caller checks); here they must be listed, once each, with a share
    /// that fits the method.
    static func allocate(
        total: Int64, method: SplitMethod, members: [(userId: UUID, share: Int64?)]
    ) -> Result<[LedgerSplit], SplitProblem> {
        if let problem = checkTotal(total) ?? checkMembers(members.map(\.userId)) {
            return .failure(problem)
        }
        switch method {
        case .equal:
            if let index = members.firstIndex(where: { $0.share != nil }) {
                return .failure(SplitProblem(field: shareField(index), message: "must be null for an equal split"))
            }
            let amounts = largestRemainder(total: total, weights: Array(repeating: 1, count: members.count))
            return .success(zip(members, amounts).map { LedgerSplit(userId: $0.userId, amount: $1, share: nil) })
        case .exact:
            return shares(of: members, in: 0...FinanceLimits.maxAmount, method: method).flatMap { amounts in
                let sum = amounts.reduce(Int128(0)) { $0 + Int128($1) }
                guard sum == Int128(total) else {
                    let difference = sum > Int128(total) ? "\(sum - Int128(total)) more" : "\(Int128(total) - sum) less"
                    return .failure(
                        SplitProblem(
                            field: "split",
                            message: "the amounts add up to \(sum), \(difference) than the total \(total)"))
                }
                return .success(splits(members, amounts: amounts, shares: amounts))
            }
        case .percentages:
            return shares(of: members, in: 0...FinanceLimits.wholePercent, method: method).flatMap { points in
                let sum = points.reduce(0, +)
                guard sum == FinanceLimits.wholePercent else {
                    return .failure(
                        SplitProblem(
                            field: "split",
                            message: "the percentages add up to \(sum) basis points; they must add up to "
                                + "\(FinanceLimits.wholePercent) (100 %)"))
                }
                return .success(
                    splits(members, amounts: largestRemainder(total: total, weights: points), shares: points))
            }
        case .shares:
            return shares(of: members, in: 1...FinanceLimits.maxShares, method: method).map { counts in
                splits(members, amounts: largestRemainder(total: total, weights: counts), shares: counts)
            }
        }
    }

    /// `total` cut in proportion to `weights` (none negative, at least one positive) by largest
    /// remainder, equal remainders going to the earlier weight. A zero weight gets nothing: the
    /// leftover units are fewer than the positive remainders.
    static func largestRemainder(total: Int64, weights: [Int64]) -> [Int64] {
        let sum = weights.reduce(Int128(0)) { $0 + Int128($1) }
        guard sum > 0 else { return weights.map { _ in 0 } }
        // Int128: a total near Int64.max times a million shares would overflow 64 bits.
        let parts = weights.map { (Int128(total) * Int128($0)).quotientAndRemainder(dividingBy: sum) }
        var amounts = parts.map { Int64($0.quotient) }
        let leftover = Int(Int128(total) - parts.reduce(Int128(0)) { $0 + $1.quotient })
        let byRemainder = parts.indices.sorted { first, second in
            parts[first].remainder != parts[second].remainder
                ? parts[first].remainder > parts[second].remainder : first < second
        }
        for index in byRemainder.prefix(leftover) {
            amounts[index] += 1
        }
        return amounts
    }

    private static func checkTotal(_ total: Int64) -> SplitProblem? {
        (0...FinanceLimits.maxAmount).contains(total)
            ? nil
            : SplitProblem(field: "totalAmount", message: "must be from 0 to \(FinanceLimits.maxAmount)")
    }

    private static func checkMembers(_ ids: [UUID]) -> SplitProblem? {
        guard (1...FinanceLimits.splitMembers).contains(ids.count) else {
            return SplitProblem(
                field: "split.members", message: "must be a list of 1 to \(FinanceLimits.splitMembers) members")
        }
        var seen: Set<UUID> = []
        for (index, id) in ids.enumerated() where !seen.insert(id).inserted {
            return SplitProblem(
                field: "split.members[\(index)].userId", message: "names a member already in the split")
        }
        return nil
    }

    /// Every member's share, each required and within `range`.
    private static func shares(
        of members: [(userId: UUID, share: Int64?)], in range: ClosedRange<Int64>, method: SplitMethod
    ) -> Result<[Int64], SplitProblem> {
        var values: [Int64] = []
        for (index, member) in members.enumerated() {
            guard let share = member.share else {
                return .failure(
                    SplitProblem(field: shareField(index), message: "is required for a split by \(method.rawValue)"))
            }
            guard range.contains(share) else {
                return .failure(
                    SplitProblem(
                        field: shareField(index),
                        message: "must be from \(range.lowerBound) to \(range.upperBound) for a split by "
                            + method.rawValue))
            }
            values.append(share)
        }
        return .success(values)
    }

    private static func splits(
        _ members: [(userId: UUID, share: Int64?)], amounts: [Int64], shares: [Int64]
    ) -> [LedgerSplit] {
        members.indices.map { LedgerSplit(userId: members[$0].userId, amount: amounts[$0], share: shares[$0]) }
    }

    private static func shareField(_ index: Int) -> String { "split.members[\(index)].share" }
}
