import COrbitShims

/// How the C allocator keeps freed memory, for a process that writes large responses. glibc
/// returns a freed block of more than its threshold (128 KiB at first, raised as large blocks
/// are freed) to the kernel at once, and trims the top of a heap whenever more than twice that
/// is free; the next request of that size then faults its pages in again, one 4 KiB page at a
/// time. A calendar window writes over a megabyte of JSON, and core paid 160–280 page faults a
/// window for it (`scripts/bench/window-ab.sh` counts them).
///
/// ``apply()`` keeps blocks of up to ``kept`` in the heaps, lets each heap keep up to as much
/// free at its top, and allows at most ``arenas`` heaps (glibc's default is eight per core, one
/// for each thread that allocates while the others are busy). So the memory it may keep free is
/// bounded, 4 × 32 MiB = 128 MiB (core's limit in `deploy/k8s/core.yaml` is 768 MiB). Under the
/// window benchmark (16 windows at once) core was at 117–126 MB resident and faulted once or
/// twice a window; with 16 MiB it was at 94 MB and still faulted 110–150 times a window, and with
/// the defaults' arenas and 32 MiB at 134–146 MB. Setting the
/// thresholds stops glibc adjusting them itself, and overrides `MALLOC_ARENA_MAX`,
/// `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` from the environment. Core alone applies
/// it (`Services/Core/Run/main.swift`): the other services write no large bodies, and media's
/// libvips keeps large buffers of its own.
package enum HeapSettings {
    /// The largest block still taken from a heap, and the free top a heap keeps.
    package static let kept: Int32 = 32 << 20
    /// The most heaps (arenas) the allocator keeps.
    package static let arenas: Int32 = 4

    /// Whether the allocator took the settings (not on a C library other than glibc).
    @discardableResult
    package static func apply() -> Bool {
        orbit_keep_freed_heap(kept, arenas) == 1
    }
}
