import Foundation
import NIOCore
import Synchronization

/// Windows assembled and written before, but for their readers' answers, by community and span:
/// members of a community read the same month over and over, and between two changes to its
/// events every read finds the same rows and made the same instances of them again: expanding
/// the series, sorting a thousand instances, writing a megabyte of their JSON. A read whose rows
/// are the very ones a kept window was made from (the same ``KnownEvent`` of each: the same
/// version of each row, see ``KnownEvents``) takes that window and adds only its reader's answers
/// and the counts, which it reads every time. Whatever the rows, the database decides what a
/// reader may see, as before: a reader who sees other rows gets a window made of them.
///
/// A window is also kept under the digest of its rows' versions (``VersionsDigest``), as the
/// window's versions statement computes it (``EventStore``): a read that finds the same digest
/// takes the window without reading the versions themselves, and binds the answers statement
/// as the window's first read did (``AnswerReach``). A window made from rows its versions
/// statement did not cover (a series read by id), or from rows read over three tries, has no
/// digest, so each read checks its rows again.
///
/// Each kept window also keeps, for each reader, the last text written for them and the answers
/// statement's records it was written from, byte for byte (``ReaderCopy``): a reader reading an
/// unchanged window again, nobody having answered since, gets the same text without its records
/// being decoded and the window written again. The records are still read each time, as the
/// reader, so what decides the text is what the database says now.
///
/// Bounded by an estimate of the memory it keeps, `limit` bytes: each window's text and cuts
/// (``RenderedWindow/size``), a kilobyte for every row it holds alive (a row's record and what
/// a window made of it, which ``KnownEvents`` may have let go of since), and its readers' copies
/// (their text and records). Past it, windows are dropped in no particular order to make room
/// for a window, and only readers' copies for a copy. A window is kept by its exact span, as
/// clients ask for months and weeks; a client asking for ever-new spans (`from=now`) only pushes
/// out the others. The application owns one (``CoreApplication`` hands it to ``EventStore``), so
/// each test server starts with an empty one.
package final class KnownWindows: Sendable {
    /// What the core service keeps: 64 MiB, some forty windows of the benchmark's busy month (fewer
    /// with their readers' copies, some 2 MiB each for that month).
    static let serviceLimit = 64 << 20

    private struct Key: Hashable {
        var community: UUID
        var window: Range<Date>
    }

    private struct Known {
        /// Which window this is: a new one (other rows, another digest) is another generation,
        /// so a reader's copy written from the window it replaced is never taken for it.
        var generation: Int
        /// The rows it was made from, by identity, in order; `held` keeps them alive, so an
        /// identity is never another row's.
        var rows: [ObjectIdentifier]
        var held: [KnownEvent]
        var digest: VersionsDigest?
        var answers: AnswerReach
        var rendered: RenderedWindow
        /// The last window written for each reader, with the answers it was written from.
        var copies: [UUID: ReaderCopy] = [:]
        /// What it keeps: its text and cuts (``RenderedWindow/size``), its rows and answer ids,
        /// and its copies (``copiesSize``).
        var size: Int
        var copiesSize = 0

        /// Drops its copies; the bytes that frees.
        mutating func dropCopies() -> Int {
            let freed = copiesSize
            copies = [:]
            size -= freed
            copiesSize = 0
            return freed
        }
    }

    /// A kept window a read may take by its rows' digest alone.
    struct Kept {
        var generation: Int
        var digest: VersionsDigest
        var answers: AnswerReach
        var rendered: RenderedWindow
    }

    /// A window as written for one reader, and the answers statement's records it was written
    /// from (``AnswerRecords/bytes``): a read of the same kept window whose records are these
    /// very bytes would write the very same text, so it takes this one instead.
    struct ReaderCopy {
        var records: [UInt8]
        var json: ByteBuffer

        /// The memory it holds: a buffer's is a power of two.
        var size: Int { records.capacity + json.capacity }
    }

    private struct Memory {
        var windows: [Key: Known] = [:]
        /// What all windows keep, their copies included; what their copies keep.
        var size = 0
        var copies = 0
        var generations = 0

        /// Drops windows until `more` bytes fit under `limit`; whether they do.
        mutating func makeRoom(for more: Int, under limit: Int) -> Bool {
            guard more <= limit else { return false }
            while size + more > limit, let some = windows.first {
                windows.removeValue(forKey: some.key)
                size -= some.value.size
                copies -= some.value.copiesSize
            }
            return true
        }

        /// Drops readers' copies, a window's all at once, other windows' before `key`'s, until
        /// `more` bytes fit under `limit`; whether they do (when they could not even without
        /// every copy, none is dropped). A copy saves less than a window (its reader's answers
        /// read and written again, not the rows expanded), so no window is dropped for one.
        mutating func makeRoomForCopy(of more: Int, under limit: Int, in key: Key) -> Bool {
            guard size + more > limit else { return true }
            guard size - copies + more <= limit else { return false }
            for other in Array(windows.keys.lazy.filter { $0 != key }) + [key] where size + more > limit {
                guard let freed = windows[other]?.dropCopies(), freed > 0 else { continue }
                size -= freed
                copies -= freed
            }
            return true
        }
    }

    private let limit: Int
    private let memory = Mutex(Memory())
    private let hits = Atomic(0)
    private let copiesTaken = Atomic(0)

    package init(limit: Int) {
        self.limit = limit
    }

    /// How many reads took a kept window by its digest alone, since this one was made.
    package var takenByDigest: Int { hits.load(ordering: .relaxed) }

    /// The memory it reckons it keeps, in bytes (see above).
    package var size: Int { memory.withLock { $0.size } }

    /// How many reads took a reader's copy (``ReaderCopy``), since this one was made.
    package var takenAsWritten: Int { copiesTaken.load(ordering: .relaxed) }

    /// Counts a read that took a kept window by its digest alone.
    func taken() {
        hits.add(1, ordering: .relaxed)
    }

    /// The window kept for `community` over `window`, when it has a digest to be taken by.
    func kept(in community: UUID, over window: Range<Date>) -> Kept? {
        guard let known = memory.withLock({ $0.windows[Key(community: community, window: window)] }),
            let digest = known.digest
        else { return nil }
        return Kept(generation: known.generation, digest: digest, answers: known.answers, rendered: known.rendered)
    }

    /// The window `kept` as last written for `reader`, if it was written from `records`; counted
    /// as taken when it is.
    func copy(
        of kept: Kept, for reader: UUID, from records: AnswerRecords, in community: UUID, over window: Range<Date>
    ) -> ByteBuffer? {
        let key = Key(community: community, window: window)
        guard
            let copy = memory.withLock({ memory in
                memory.windows[key].flatMap { $0.generation == kept.generation ? $0.copies[reader] : nil }
            }), records.are(copy.records)
        else { return nil }
        copiesTaken.add(1, ordering: .relaxed)
        return copy.json
    }

    /// Keeps `copy` as the window `kept` last written for `reader`, while that window is kept
    /// (and the copy fits beside it).
    func keep(_ copy: ReaderCopy, of kept: Kept, for reader: UUID, in community: UUID, over window: Range<Date>) {
        let key = Key(community: community, window: window)
        memory.withLock { memory in
            guard memory.windows[key]?.generation == kept.generation else { return }
            if let old = memory.windows[key]?.copies.removeValue(forKey: reader)?.size {
                memory.windows[key]?.size -= old
                memory.windows[key]?.copiesSize -= old
                memory.size -= old
                memory.copies -= old
            }
            guard memory.makeRoomForCopy(of: copy.size, under: limit, in: key) else { return }
            memory.windows[key]?.copies[reader] = copy
            memory.windows[key]?.size += copy.size
            memory.windows[key]?.copiesSize += copy.size
            memory.size += copy.size
            memory.copies += copy.size
        }
    }

    /// The window of `community` over `window` made from `rows`: kept, or made by `make` now
    /// (and kept, under `digest` when the rows have one, with the answers statement's `answers`).
    func rendered(
        of rows: [KnownEvent], digest: VersionsDigest?, answers: AnswerReach, in community: UUID,
        over window: Range<Date>,
        make: () throws -> RenderedWindow
    ) rethrows -> RenderedWindow {
        let key = Key(community: community, window: window)
        let identities = rows.map(ObjectIdentifier.init).sorted()
        let known = memory.withLock { $0.windows[key] }
        if let known, known.rows == identities, known.digest == digest { return known.rendered }
        // The same rows under another digest (or none): the same window, kept under this one.
        let rendered = try known.flatMap { $0.rows == identities ? $0.rendered : nil } ?? make()
        memory.withLock { memory in
            if let old = memory.windows.removeValue(forKey: key) {
                memory.size -= old.size
                memory.copies -= old.copiesSize
            }
            memory.generations += 1
            let kept = Known(
                generation: memory.generations, rows: identities, held: rows, digest: digest, answers: answers,
                rendered: rendered,
                size: rendered.size + rows.count * 1_024 + answers.ids.count * MemoryLayout<UUID>.stride)
            guard memory.makeRoom(for: kept.size, under: limit) else { return }
            memory.windows[key] = kept
            memory.size += kept.size
        }
        return rendered
    }
}

/// What PostgreSQL says of a set of event rows' versions: how many rows, and the exclusive or of
/// a 64-bit hash of each row's id and version (`uuid_hash_extended(id,
/// timestamp_hash_extended(updated_at, sequence))`). The `events_version` trigger raises
/// `sequence` and moves `updated_at` (the clock's time) on every change, so a row changed, added
/// or gone changes the digest (but for a chance of one in 2^64); `updated_at` also tells apart
/// a row whose `sequence` came round again after the database went back to an earlier point
/// (a restore) under a running service. Cheaper for PostgreSQL than sending the rows; a SHA-256
/// of their text cost it more than sending them (BENCHMARKS.md).
struct VersionsDigest: Equatable, Sendable {
    /// The rows' count.
    var rows: Int
    /// The exclusive or of the rows' hashes.
    var hash: Int
}
