import Foundation
import OrbitCoveModels

/// The answers a read found, by instance: each instance's counts and the caller's own answers
/// (theirs and their dependants'), several to one instance in the order they were given. A
/// window places its rows in its own instances instead (``RenderedWindow``), through the same
/// ``placed(_:in:count:)``.
struct AnswerTable {
    private let places: [InstanceKey: Int]
    private let answers: [InstanceAnswers?]

    init() {
        places = [:]
        answers = []
    }

    /// One row of the answers statement: an instance's counts and, if the caller answered it,
    /// one of their answers (theirs or a dependant's) with when it was given.
    struct Row {
        var key: InstanceKey
        var counts: AttendanceCounts
        var rsvp: EventRSVP?
        var queuedAt = Date.distantPast
        var id = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    }

    /// The rows in any order.
    init(_ rows: [Row]) {
        var places: [InstanceKey: Int] = [:]
        for row in rows where places[row.key] == nil { places[row.key] = places.count }
        self.places = places
        answers = Self.placed(rows, in: places, count: places.count)
    }

    /// The answers to one instance (nil: nobody answered it yet).
    subscript(key: InstanceKey) -> InstanceAnswers? {
        places[key].flatMap { answers[$0] }
    }

    /// The answers in `rows` (in any order) at their instances' places in `places`, of `count`
    /// (nil where no row is; rows of instances without a place are left out): each instance's
    /// counts (every row of an instance has them) and its answers, several in the order they
    /// were given (when queued, ties by id as PostgreSQL orders uuids: byte by byte).
    static func placed(_ rows: [Row], in places: [InstanceKey: Int], count: Int) -> [InstanceAnswers?] {
        var placed = [InstanceAnswers?](repeating: nil, count: count)
        // The first answer to each place, and all of them where there are several.
        var first = [Row?](repeating: nil, count: count)
        var several: [Int: [Row]] = [:]
        for row in rows {
            guard let place = places[row.key] else { continue }
            guard let rsvp = row.rsvp else {
                if placed[place] == nil { placed[place] = InstanceAnswers(counts: row.counts, mine: []) }
                continue
            }
            if let earlier = first[place] {
                several[place, default: [earlier]].append(row)
            } else {
                first[place] = row
                placed[place] = InstanceAnswers(counts: row.counts, mine: [rsvp])
            }
        }
        for (place, rows) in several {
            let order = rows.map { row in
                let (high, low) = row.id.halves
                return (row.queuedAt, high, low)
            }
            placed[place]?.mine = order.indices.sorted { order[$0] < order[$1] }.compactMap { rows[$0].rsvp }
        }
        return placed
    }
}
