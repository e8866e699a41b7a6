#ifndef ORBIT_VIPS_H
#define ORBIT_VIPS_H
#include <stddef.h>

// Fixed-signature wrappers around libvips 8.14 for the media worker: Swift cannot call the
// variadic vips_* functions. This header names no libvips or GLib type, so Swift imports it
// without GLib's headers.
//
// Every int-returning function gives 0 on success and -1 on failure; the failure's text is then
// read, on the same thread, with orbit_vips_last_error. Calls are thread-safe after
// orbit_vips_init; a worker thread calls orbit_vips_thread_shutdown when it finishes a job.
//
// Accepted input: JPEG, PNG, WebP, GIF and HEIF (HEIC, AVIF), recognised by
// content, not name. Anything else, including TIFF, SVG and every format only ImageMagick reads,
// fails with "unsupported image format". Thumbnail and original also refuse a truncated file and
// anything over 100 megapixels (ORBIT_VIPS_MAX_PIXELS), whatever the caller checked before.

static const int ORBIT_VIPS_JPEG = 0;
static const int ORBIT_VIPS_WEBP = 1;
static const int ORBIT_VIPS_PNG = 2;

/// Starts libvips once per process with server settings: no operation cache, one thread per
/// operation (parallelism comes from concurrent jobs), untrusted operations and every loader
/// outside the accepted formats blocked. Fails if a required loader is missing from this build.
int orbit_vips_init(const char *program);

/// Reads the header only: no pixel is decoded, so this is cheap even for a decompression bomb.
/// `width` and `height` are as stored: for `orientation` 5–8 the image displays rotated, with
/// the two swapped. HEIF reports 1 and the displayed size (libheif applies its own rotation).
/// `pages` counts frames (GIF, WebP) or top-level images (HEIF).
/// `loader` receives the libvips loader class, e.g. "VipsForeignLoadJpegBuffer".
int orbit_vips_header(const void *buf, size_t len, int *width, int *height, int *pages,
                      int *orientation, char *loader, size_t loader_len);

/// A downscaled copy at most `width` pixels wide and 4 × `width` high (never enlarged; the
/// aspect ratio kept: a tall screenshot stays within what WebP can hold), upright by its EXIF orientation, in sRGB, without metadata, encoded as
/// ORBIT_VIPS_JPEG, _WEBP or _PNG at `quality` 1–100 (ignored for PNG). Animated images give
/// their first frame. Free `*out` with orbit_vips_free.
int orbit_vips_thumbnail(const void *buf, size_t len, int width, int format, int quality,
                         void **out, size_t *out_len);

/// The full-size image, upright, in sRGB, without metadata (EXIF, GPS, XMP, IPTC, ICC, text),
/// re-encoded like orbit_vips_thumbnail (a JPEG baseline: it streams). Animated images give
/// their first frame. An image to turn (orientation 2–8) is decoded whole into memory, 3 bytes a pixel.
int orbit_vips_original(const void *buf, size_t len, int format, int quality, void **out,
                        size_t *out_len);

/// Frees the per-thread state libvips keeps, and returns freed heap to the system (glibc keeps
/// it per thread otherwise); call at the end of a job on a worker thread.
void orbit_vips_thread_shutdown(void);

/// Bytes of pixel memory libvips holds right now, for a gauge.
size_t orbit_vips_tracked_mem(void);

/// Frees an output buffer from orbit_vips_thumbnail or orbit_vips_original.
void orbit_vips_free(void *buf);

/// Copies this thread's last error (NUL-terminated, truncated to fit) into `buf` and clears it.
/// Returns the full message's length, so a result >= `len` means it was truncated.
size_t orbit_vips_last_error(char *buf, size_t len);

#endif
