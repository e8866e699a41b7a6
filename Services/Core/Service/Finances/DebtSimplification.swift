import Foundation

/// Turns members' nets (positive: owed; negative: owing; together zero) into transfers that
/// settle everyone, and explains each transfer by the ledger rows behind it.
///
/// The fewest transfers are found exactly: members who can be split into `k` disjoint groups
/// that each net to zero need `n − k` transfers (each group settles within itself in one
/// fewer transfer than it has members, and no plan can do better), so the problem is the
/// largest such partition, found by dynamic programming over subsets. That costs `2ⁿ` memory
/// and `n·2ⁿ` steps, so beyond ``exactCeiling`` members it gives way to the greedy plan, which
/// needs at most `n − 1` transfers.
///
/// Everything is ordered by the members' UUID text, so the same nets always give the same plan.
enum DebtSimplification {
    /// `from` pays `to` `amount` minor units.
    struct Transfer: Equatable, Sendable {
        var from: UUID
        var to: UUID
        var amount: Int64
    }

    /// One split row: `debtor` owes `creditor` (the one who paid) `amount` (> 0) for
    /// `transactionId`.
    struct Edge: Sendable {
        var transactionId: UUID
        var debtor: UUID
        var creditor: UUID
        var amount: Int64
    }

    /// How much of one transaction explains part of a transfer.
    typealias Portion = (transactionId: UUID, amount: Int64)

    /// The most members ``minimum(_:)`` searches exactly: 2²² subsets take 36 MiB and about
    /// 0.2 s (20 members, the default limit, take 9 MiB and 35 ms).
    static let exactCeiling = 22

    /// The plan for `nets`: the fewest transfers (`"minimum"`) when at most `exactLimit` members
    /// have a non-zero net, otherwise the greedy plan (`"greedy"`).
    ///
    /// The nets should add up to zero. If they do not (a ledger bug), nothing traps: the
    /// transfers settle what can be settled and leave the imbalance with someone.
    static func settle(_ nets: [UUID: Int64], exactLimit: Int = 20) -> (transfers: [Transfer], method: String) {
        let owing = nets.filter { $0.value != 0 }
        if owing.count <= min(exactLimit, exactCeiling) {
            return (minimum(owing), "minimum")
        }
        return (greedy(owing), "greedy")
    }

    /// Repeatedly, the largest debtor pays the largest creditor as much as settles one of them;
    /// equal nets go to the member whose UUID text sorts first. At most `n − 1` transfers, but
    /// more than the minimum when a smaller group could have settled among itself. `O(n²)`.
    static func greedy(_ nets: [UUID: Int64]) -> [Transfer] {
        greedy(ordered(nets))
    }

    /// The fewest transfers that settle `nets` (see the type's notes). Above ``exactCeiling``
    /// non-zero members the search would cost too much memory and time, so it answers as
    /// ``greedy(_:)``.
    static func minimum(_ nets: [UUID: Int64]) -> [Transfer] {
        let members = ordered(nets)
        guard members.count <= exactCeiling else { return greedy(members) }
        return zeroSumGroups(members.map(\.net)).flatMap { group in greedy(group.map { members[$0] }) }
    }

    /// The members with a non-zero net, in UUID text order.
    private static func ordered(_ nets: [UUID: Int64]) -> [(id: UUID, net: Int64)] {
        nets.filter { $0.value != 0 }
            .map { (key: $0.key.uuidString, id: $0.key, net: $0.value) }
            .sorted { $0.key < $1.key }
            .map { ($0.id, $0.net) }
    }

    private static func greedy(_ members: [(id: UUID, net: Int64)]) -> [Transfer] {
        var balances = members.map(\.net)
        var transfers: [Transfer] = []
        while true {
            // Strict comparisons keep the first of equal balances: the earlier UUID.
            var debtor: Int?
            var creditor: Int?
            for index in balances.indices {
                if balances[index] < 0, balances[index] < debtor.map({ balances[$0] }) ?? 0 { debtor = index }
                if balances[index] > 0, balances[index] > creditor.map({ balances[$0] }) ?? 0 { creditor = index }
            }
            guard let debtor, let creditor else { return transfers }
            // Magnitudes, so that even an Int64.min net cannot overflow; each step zeroes one side.
            let amount = Int64(min(balances[debtor].magnitude, balances[creditor].magnitude))
            balances[debtor] += amount
            balances[creditor] -= amount
            transfers.append(Transfer(from: members[debtor].id, to: members[creditor].id, amount: amount))
        }
    }

    /// The largest partition of `nets` (indices) into groups that each sum to zero, ordered by
    /// their first member. If the nets do not sum to zero, one group carries the imbalance.
    ///
    /// `best[mask]` is the most zero-sum sets in a chain `mask ⊃ mask − {i} ⊃ … ⊃ ∅`; the
    /// differences between consecutive zero-sum sets of the best chain from the full set are the
    /// groups. Sums wrap rather than trap (nets are far below Int64's range in practice).
    private static func zeroSumGroups(_ nets: [Int64]) -> [[Int]] {
        let count = nets.count
        guard count > 0 else { return [] }
        let size = 1 << count
        var sums = [Int64](repeating: 0, count: size)
        var best = [UInt8](repeating: 0, count: size)
        sums.withUnsafeMutableBufferPointer { sums in
            best.withUnsafeMutableBufferPointer { best in
                for mask in 1..<size {
                    sums[mask] = sums[mask & (mask - 1)] &+ nets[mask.trailingZeroBitCount]
                    var most: UInt8 = 0
                    var rest = mask
                    while rest != 0 {
                        most = max(most, best[mask & ~(rest & -rest)])
                        rest &= rest - 1
                    }
                    best[mask] = most + (sums[mask] == 0 ? 1 : 0)
                }
            }
        }
        var groups: [[Int]] = []
        var group: [Int] = []
        var mask = size - 1
        while mask != 0 {
            let target = best[mask] - (sums[mask] == 0 ? 1 : 0)
            var rest = mask
            var chosen = rest.trailingZeroBitCount
            while rest != 0 {
                let index = rest.trailingZeroBitCount
                if best[mask & ~(1 << index)] == target {
                    chosen = index
                    break
                }
                rest &= rest - 1
            }
            group.append(chosen)
            mask &= ~(1 << chosen)
            if sums[mask] == 0 {
                groups.append(group.sorted())
                group = []
            }
        }
        return groups.sorted { $0[0] < $1[0] }
    }

    /// Why each transfer is owed, in the transfers' order.
    ///
    /// The payer's side is drawn from the rows where the payer owes someone (`edges`, newest
    /// first): first those owed to this payee, then the others, splitting the last row used.
    /// The payee's side is drawn likewise from the rows where the payee is owed, those owed by
    /// this payer first. What a row has given to one transfer is not given again, so a member
    /// with several transfers has each explained by different money. A net is what one is owed
    /// less what one owes, so a payer's rows always cover their transfers and a payee's rows
    /// theirs, and each side adds up to the transfer; with rows inconsistent with the nets a side
    /// may fall short. Rows of the same transaction are merged within a side. Rows with no
    /// amount or with the payer owing themselves are ignored.
    static func explain(
        _ transfers: [Transfer], edges: [Edge]
    ) -> [(payerSide: [Portion], payeeSide: [Portion])] {
        var byDebtor: [UUID: [Int]] = [:]
        var byCreditor: [UUID: [Int]] = [:]
        for (index, edge) in edges.enumerated() where edge.amount > 0 && edge.debtor != edge.creditor {
            byDebtor[edge.debtor, default: []].append(index)
            byCreditor[edge.creditor, default: []].append(index)
        }
        // Each row can be drawn on once as a debt and once as a credit.
        var debtLeft = edges.map { max($0.amount, 0) }
        var creditLeft = debtLeft
        return transfers.map { transfer in
            let payerSide = draw(
                transfer.amount, from: byDebtor[transfer.from] ?? [], edges: edges, left: &debtLeft,
                first: { $0.creditor == transfer.to })
            let payeeSide = draw(
                transfer.amount, from: byCreditor[transfer.to] ?? [], edges: edges, left: &creditLeft,
                first: { $0.debtor == transfer.from })
            return (payerSide, payeeSide)
        }
    }

    /// Up to `amount` from the rows `candidates`, those matching `first` before the others,
    /// each in the given order, one portion per transaction.
    private static func draw(
        _ amount: Int64, from candidates: [Int], edges: [Edge], left: inout [Int64], first: (Edge) -> Bool
    ) -> [Portion] {
        var needed = amount
        var portions: [Portion] = []
        var positions: [UUID: Int] = [:]
        let preferred = candidates.filter { first(edges[$0]) }
        let others = candidates.filter { !first(edges[$0]) }
        for index in preferred + others where needed > 0 && left[index] > 0 {
            let taken = min(needed, left[index])
            left[index] -= taken
            needed -= taken
            let transaction = edges[index].transactionId
            if let position = positions[transaction] {
                portions[position].amount += taken
            } else {
                positions[transaction] = portions.count
                portions.append((transaction, taken))
            }
        }
        return portions
    }
}
