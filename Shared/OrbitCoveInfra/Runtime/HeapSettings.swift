import COrbitShims

/// How the C allocator keeps freed memory. glibc returns a freed block of more than its
/// threshold (128 KiB at first) to the kernel at once, and trims the top of a heap whenever more
/// than twice that is free; the next request of that size then faults its pages in again, one
/// 4 KiB page at a time. A calendar window writes over a megabyte of JSON, and a window read
/// paid about 160 page faults for it (`scripts/bench/window-ab.sh` counts them). Keeping blocks
/// and free heap tops of up to 32 MiB in the process costs it a few more megabytes resident.
enum HeapSettings {
    /// The largest block still taken from a heap, and the free top a heap keeps.
    static let kept: Int32 = 32 << 20

    /// Whether the allocator took the settings.
    @discardableResult
    static func apply() -> Bool {
        orbit_keep_freed_heap(kept) == 1
    }
}
