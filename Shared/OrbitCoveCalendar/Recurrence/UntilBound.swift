/// An UNTIL value made comparable with candidate instances in one zone.
///
/// UTC bounds compare instants, like dateutil does with an aware UNTIL. Floating and DATE bounds compare the
/// wall clock of the series' zone: a floating time is a reading of that clock, and a DATE keeps every instance
/// on that local date, so `UNTIL=20260630` keeps an 18:00 practice on June 30.
enum UntilBound: Sendable {
    case instant(Int64)
    case wall(Int64)
    case day(Int)

    init?(_ end: RecurrenceRule.End) {
        guard case .until(let until) = end else { return nil }
        self.init(until)
    }

    init(_ until: RecurrenceRule.Until) {
        switch until {
        case .utc(let time): self = .instant(time.wallSeconds)
        case .floating(let time): self = .wall(time.wallSeconds)
        case .date(let date): self = .day(date.dayNumber)
        }
    }

    func excludes(day: Int, wall: Int64, instant: Int64) -> Bool {
        switch self {
        case .instant(let bound): instant > bound
        case .wall(let bound): wall > bound
        case .day(let bound): day > bound
        }
    }

    func lastLocalDay(clock: ZoneClock) -> Int {
        switch self {
        case .instant(let bound): Int(clock.wallSeconds(atInstant: bound).floorDivided(by: 86_400))
        case .wall(let bound): Int(bound.floorDivided(by: 86_400))
        case .day(let bound): bound
        }
    }
}
