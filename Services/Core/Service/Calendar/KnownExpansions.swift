import Foundation
import OrbitCoveCalendar
import Synchronization

/// The starts of series expanded before, by series id and version, over a span wider than the
/// window that asked: a window read expands every series in it on every request, and the
/// expansion was the largest part of assembling the window. A window inside a remembered span
/// is a slice of it; one outside is expanded again (and remembered instead). The version is the
/// row's `sequence` and `updated_at`, which every change moves (see ``KnownEvents``). The
/// application owns one (``CoreApplication`` hands it to ``EventStore``).
package final class KnownExpansions: Sendable {
    /// What the core service keeps: at most a million starts in all (16 MB), a year of a few
    /// thousand weekly series.
    package static let serviceLimit = 1_000_000

    /// How far past the asked window a span reaches on either side, so the windows of the next
    /// days and weeks fall inside it.
    package static let margin: TimeInterval = 92 * 86_400

    private struct Span {
        var sequence: Int
        var updatedAt: Date
        var covers: Range<Date>
        var starts: [Date]
    }

    private struct Memory {
        var spans: [UUID: Span] = [:]
        var starts = 0
    }

    /// Most starts kept in all spans together; past it the memory starts over.
    private let limit: Int
    private let memory = Mutex(Memory())

    package init(limit: Int) {
        self.limit = limit
    }

    /// What `expansion().occurrences(in: window, limit: most)` gives, from a remembered span when
    /// one covers the window. `expansion` is made only when none does.
    package func starts(
        of series: UUID, sequence: Int, updatedAt: Date, in window: Range<Date>, most: Int,
        expansion: () -> RecurrenceExpansion?
    ) -> [Date] {
        let known = memory.withLock { $0.spans[series] }
        if let known, known.sequence == sequence, known.updatedAt == updatedAt,
            known.covers.lowerBound <= window.lowerBound, window.upperBound <= known.covers.upperBound
        {
            return Self.slice(known.starts, window, most: most)
        }
        guard let expansion = expansion() else { return [] }
        let wide =
            window.lowerBound.addingTimeInterval(-Self.margin)..<window.upperBound.addingTimeInterval(Self.margin)
        // A guard: a span too full to keep whole is not remembered (the densest rules here
        // are daily, 584 starts over the widest window and both margins).
        let starts = expansion.occurrences(in: wide, limit: Self.mostPerSpan + 1)
        guard starts.count <= Self.mostPerSpan else {
            return expansion.occurrences(in: window, limit: most)
        }
        memory.withLock { memory in
            memory.starts -= memory.spans[series]?.starts.count ?? 0
            if memory.starts + starts.count > limit { memory = Memory() }
            memory.spans[series] = Span(sequence: sequence, updatedAt: updatedAt, covers: wide, starts: starts)
            memory.starts += starts.count
        }
        return Self.slice(starts, window, most: most)
    }

    /// Most starts one span keeps.
    static let mostPerSpan = 2_000

    private static func slice(_ starts: [Date], _ window: Range<Date>, most: Int) -> [Date] {
        let first = starts.partitioningIndex { $0 >= window.lowerBound }
        let end = starts.partitioningIndex { $0 >= window.upperBound }
        return Array(starts[first..<max(first, min(end, first + most))])
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for a predicate false then true
    /// along the array (binary search).
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var (low, high) = (startIndex, endIndex)
        while low < high {
            let middle = low + (high - low) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
