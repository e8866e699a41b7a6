/// A PostgreSQL snapshot as `pg_current_snapshot()` writes it (`xmin:xmax:xip,...`), read as
/// PostgreSQL reads one: what a sync token holds, and what the realtime stream compares.
///
/// A snapshot sees the transactions that had ended when it was taken. Two snapshots taken one
/// after the other are therefore ordered: the later sees everything the earlier saw. The stream
/// keeps each client's position as one and moves it forward only to a later one, so the changes
/// it delivers between two positions are exactly those the later sees and the earlier did not.
package struct PostgresSnapshot: Equatable, Hashable, Sendable {
    package let xmin: UInt64
    package let xmax: UInt64
    /// The transactions in progress when it was taken, ascending, each in `xmin..<xmax`.
    package let running: [UInt64]

    package init?(_ text: some StringProtocol) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        // PostgreSQL's transaction ids (xid8) stop at 2^63 - 1, and an id whose low 32 bits are
        // zero is not valid: it refuses a snapshot whose xmin or xmax is past them or such a one.
        guard fields.count == 3, let xmin = UInt64(fields[0]), let xmax = UInt64(fields[1]), xmin <= xmax,
            xmax <= UInt64(Int64.max), UInt32(truncatingIfNeeded: xmin) != 0, UInt32(truncatingIfNeeded: xmax) != 0
        else { return nil }
        var running: [UInt64] = []
        for field in fields[2].split(separator: ",", omittingEmptySubsequences: false) where !fields[2].isEmpty {
            guard let id = UInt64(field), xmin <= id, id < xmax, running.last.map({ $0 < id }) ?? true else {
                return nil
            }
            running.append(id)
        }
        (self.xmin, self.xmax, self.running) = (xmin, xmax, running)
    }

    package var text: String { "\(xmin):\(xmax):" + running.map(String.init).joined(separator: ",") }

    /// This snapshot as it would be had the transactions `unseen` (each one it sees, so below
    /// `xmax`) not yet ended: a position before their changes, after everything else it sees.
    /// Past `most` of them (a position's text must stay short) it is a position before the
    /// oldest of them, which also leaves unseen whatever began after that one.
    package func hiding(_ unseen: Set<UInt64>, most: Int = 64) -> PostgresSnapshot {
        guard let oldest = unseen.min() else { return self }
        guard unseen.count <= most else {
            return PostgresSnapshot(
                xmin: Swift.min(xmin, oldest), xmax: oldest, running: running.filter { $0 < oldest })
        }
        return PostgresSnapshot(
            xmin: Swift.min(xmin, oldest), xmax: xmax, running: Set(running).union(unseen).sorted())
    }

    private init(xmin: UInt64, xmax: UInt64, running: [UInt64]) {
        (self.xmin, self.xmax, self.running) = (xmin, xmax, running)
    }

    /// `pg_visible_in_snapshot(txid, self)`: the transaction had ended when this was taken.
    package func sees(_ txid: UInt64) -> Bool {
        if txid < xmin { return true }
        if txid >= xmax { return false }
        return !isRunning(txid)
    }

    /// Whether this snapshot sees every transaction `other` sees (it was taken at the same time
    /// as `other` or later).
    package func includes(_ other: PostgresSnapshot) -> Bool {
        // A transaction running here must not be one `other` saw end.
        for txid in running where other.sees(txid) { return false }
        // Nor may `other` have seen one this snapshot had not yet heard of.
        guard xmax < other.xmax else { return true }
        if xmax < other.xmin { return false }
        let unseenThere = other.running.count { $0 >= xmax }
        return UInt64(unseenThere) == other.xmax - xmax
    }

    /// Whether this names transactions `current` had not begun: a position made up, or one from
    /// another database (one restored from an older backup, say), never one `current`'s
    /// database gave out. Nothing can be said to have changed since it.
    package func isAhead(of current: PostgresSnapshot) -> Bool { xmax > current.xmax }

    private func isRunning(_ txid: UInt64) -> Bool {
        var (low, high) = (0, running.count)
        while low < high {
            let middle = (low + high) / 2
            if running[middle] < txid { low = middle + 1 } else { high = middle }
        }
        return low < running.count && running[low] == txid
    }
}
