import Foundation

/// Converts between instants and wall-clock seconds in one IANA zone.
///
/// Both directions work on whole seconds since 1970 (`Int64`), so results compare exactly and EXDATE matching
/// never depends on floating-point noise.
struct ZoneClock: Sendable {
    let timeZone: TimeZone

    init(_ timeZone: TimeZone) {
        self.timeZone = timeZone
    }

    func offset(atInstant instant: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: ZoneClock.date(ofSeconds: instant)))
    }

    func wallSeconds(atInstant instant: Int64) -> Int64 {
        instant + offset(atInstant: instant)
    }

    /// The local day number (days since 1970-01-01 on this zone's calendar) of `date`.
    func localDay(of date: Date) -> Int {
        Int(wallSeconds(atInstant: ZoneClock.seconds(of: date)).floorDivided(by: 86_400))
    }

    /// Resolves a wall-clock time like Python's `zoneinfo` with `fold=0`.
    ///
    /// zoneinfo places each transition, on the wall clock, at `transition + max(offsetBefore, offsetAfter)` and
    /// reads anything earlier with the old offset. So in a fall-back overlap the earlier (pre-transition) offset
    /// wins, and in a spring-forward gap the pre-transition offset is used too, which moves 02:30 to 03:30.
    /// Taking the offsets a day either side assumes no zone changes offset twice within two days, which holds
    /// for every zone in the tz database.
    func instant(atWallSeconds wall: Int64) -> Int64 {
        let before = offset(atInstant: wall - 86_400)
        let after = offset(atInstant: wall + 86_400)
        if before == after { return wall - before }
        let beforeHolds = offset(atInstant: wall - before) == before
        let afterHolds = offset(atInstant: wall - after) == after
        return (afterHolds && !beforeHolds) ? wall - after : wall - before
    }

    /// Resolves a wall-clock time by the rule reminders keep (docs/ARCHITECTURE.md, "Time"): a
    /// time repeated when clocks go back is its first occurrence, and a time skipped when they
    /// go forward is the first instant after it that exists, the moment of the jump (02:30 on a
    /// New York spring-forward day is 03:00 EDT).
    func firstInstant(atWallSeconds wall: Int64) -> Int64 {
        let before = offset(atInstant: wall - 86_400)
        let after = offset(atInstant: wall + 86_400)
        if before == after { return wall - before }
        let beforeHolds = offset(atInstant: wall - before) == before
        let afterHolds = offset(atInstant: wall - after) == after
        if beforeHolds { return wall - before }
        if afterHolds { return wall - after }
        // In the gap: the jump lies between the two readings; find its first second.
        var low = min(wall - before, wall - after)
        var high = max(wall - before, wall - after)
        while low < high {
            let middle = low + (high - low) / 2
            if offset(atInstant: middle) == after { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Whole seconds since 1970, never trapping: dates beyond ±10^13 s (±300,000 years, far outside the years
    /// 1...9999 the engine handles) are clamped, and NaN reads as the far future so it matches nothing.
    static func seconds(of date: Date, rule: FloatingPointRoundingRule = .down) -> Int64 {
        let interval = date.timeIntervalSince1970
        guard !interval.isNaN else { return 10_000_000_000_000 }
        return Int64(max(-1e13, min(1e13, interval)).rounded(rule))
    }

    static func date(ofSeconds seconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
