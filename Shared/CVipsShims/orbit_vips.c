// libvips behind fixed signatures (see orbit_vips.h). Checked against libvips 8.14.1.
//
// Invariants:
// - Input is sniffed against our own list of accepted loaders before libvips sees it. In 8.14
//   a blocked loader still runs its sniffer inside vips_foreign_find_load_buffer (8.15 skips
//   them), and ImageMagick's sniffer starts ImageMagick: our check keeps every other format's
//   code, sniffers included, away from uploads. Blocking in orbit_vips_init is the second wall.
// - Every image lives in the local array of one `scope` object, so one g_object_unref on the
//   way out frees them on every path.
// - Savers are not blocked: no input can choose one, we pick JPEG, WebP or PNG ourselves.
#include "orbit_vips.h"

#include <stdarg.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <vips/vips.h>

// The last wall against decompression bombs; the worker refuses far smaller images earlier,
// from orbit_vips_header, with its own limit. Decoding one RGB pixel costs 3 bytes.
#ifndef ORBIT_VIPS_MAX_PIXELS
#define ORBIT_VIPS_MAX_PIXELS (100 * 1000 * 1000)
#endif

// In libvips' own sniffing order (by priority), so that our pick and libvips' agree.
static const struct {
    const char *name;
    gboolean required;
} accepted[] = {
    {"VipsForeignLoadPngBuffer", TRUE},
    {"VipsForeignLoadWebpBuffer", TRUE},
    {"VipsForeignLoadJpegBuffer", TRUE},
    {"VipsForeignLoadNsgifBuffer", TRUE},
    {"VipsForeignLoadHeifBuffer", TRUE},  // HEIC and AVIF
    // No PDF: receipts are stored as uploaded, so poppler (which libvips marks untrusted) never
    // parses what a stranger sent.
};

// libvips has one error buffer for the process. Our own refusals are written straight into a
// per-thread copy; a libvips failure is copied there at once. Libraries also log non-fatal
// errors into the shared buffer (libheif's reader: "bad seek"), and it silently stops growing at
// 10 KB, so each call starts it clean. The price: a libvips failure on another thread, between
// its vips_error and its copy, may lose its text and read "libvips failed without a message".
static _Thread_local char thread_error[1024];

static void begin(void) {
    vips_error_clear();
    thread_error[0] = '\0';
}

static void capture_error(void) {
    char *message = vips_error_buffer_copy();
    size_t n = MIN(g_strlcpy(thread_error, message, sizeof thread_error), sizeof thread_error - 1);
    g_free(message);
    while (n > 0 && thread_error[n - 1] == '\n')
        thread_error[--n] = '\0';
}

static void refuse(const char *format, ...) G_GNUC_PRINTF(1, 2);
static void refuse(const char *format, ...) {
    va_list args;
    va_start(args, format);
    g_vsnprintf(thread_error, sizeof thread_error, format, args);
    va_end(args);
}

// Returns -1 with this call's error text in place: ours if we refused, else libvips'.
static int fail(void) {
    if (!thread_error[0])
        capture_error();
    if (!thread_error[0])
        g_strlcpy(thread_error, "libvips failed without a message", sizeof thread_error);
    return -1;
}

int orbit_vips_init(const char *program) {
#ifdef __GLIBC__
    // Blocks of 1 MB and more (encoded files, uploads, libvips' larger strips) come from mmap
    // and go back to the system when freed: glibc otherwise raises its mmap threshold to the
    // largest block freed so far (up to 32 MB) and serves later ones from its per-thread
    // heaps, which only grow, and it keeps up to eight such heaps a core. Peak 284 MB -> 171 MB
    // at 0.93 of vipsthumbnail's rate (256 KB: 148 MB at 0.91); scripts/bench/media.sh,
    // BENCHMARKS.md "Media".
    mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
    mallopt(M_ARENA_MAX, 2);
#endif
    if (VIPS_INIT(program ? program : "orbitcove-media"))
        return fail();
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_concurrency_set(1);
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    for (size_t i = 0; i < G_N_ELEMENTS(accepted); i++) {
        if (!g_type_from_name(accepted[i].name)) {
            if (!accepted[i].required)
                continue;
            refuse("this libvips has no %s", accepted[i].name);
            return fail();
        }
        vips_operation_block_set(accepted[i].name, FALSE);
    }
    return 0;
}

// The accepted loader for `buf`, or NULL with an error set.
static const char *accepted_loader(const void *buf, size_t len) {
    if (len == 0) {
        refuse("empty input");
        return NULL;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(accepted); i++) {
        if (!g_type_from_name(accepted[i].name) ||
            !vips_foreign_is_a_buffer(accepted[i].name, buf, len))
            continue;
        const char *chosen = vips_foreign_find_load_buffer(buf, len);
        if (chosen && strcmp(chosen, accepted[i].name) == 0)
            return chosen;
        if (chosen)
            refuse("unsupported image format (%s)", chosen);
        return NULL;
    }
    refuse("unsupported image format");
    return NULL;
}

// Opens an accepted image lazily (header only) and refuses one over the pixel ceiling.
static VipsImage *open_accepted(const void *buf, size_t len) {
    const char *loader = accepted_loader(buf, len);
    if (!loader)
        return NULL;
    VipsImage *image = vips_image_new_from_buffer(buf, len, "",
                                                  "access", VIPS_ACCESS_SEQUENTIAL,
                                                  "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL);
    if (image && (guint64) image->Xsize * (guint64) image->Ysize > ORBIT_VIPS_MAX_PIXELS) {
        refuse("image of %dx%d pixels is over the limit of %d", image->Xsize, image->Ysize,
               ORBIT_VIPS_MAX_PIXELS);
        g_object_unref(image);
        return NULL;
    }
    return image;
}

int orbit_vips_header(const void *buf, size_t len, int *width, int *height, int *pages,
                      int *orientation, char *loader, size_t loader_len) {
    begin();
    const char *name = accepted_loader(buf, len);
    if (!name)
        return fail();
    VipsImage *image = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image)
        return fail();
    *width = image->Xsize;
    *height = image->Ysize;
    *pages = vips_image_get_n_pages(image);
    *orientation = vips_image_get_orientation(image);
    if (loader_len > 0)
        g_strlcpy(loader, name, loader_len);
    g_object_unref(image);
    return 0;
}

static gboolean valid_output(int format, int quality) {
    if (format != ORBIT_VIPS_JPEG && format != ORBIT_VIPS_WEBP && format != ORBIT_VIPS_PNG) {
        refuse("unknown output format %d", format);
        return FALSE;
    }
    if (quality < 1 || quality > 100) {
        refuse("quality %d is outside 1-100", quality);
        return FALSE;
    }
    return TRUE;
}

// JPEG has no alpha: lay transparent pixels on white rather than on whatever colour they hide.
static int flatten_for_jpeg(VipsImage *in, VipsImage **out) {
    VipsArrayDouble *white = vips_array_double_newv(1, 255.0);
    int result = vips_flatten(in, out, "background", white, NULL);
    vips_area_unref(VIPS_AREA(white));
    return result;
}

// libvips 8.14.1, Debian 12's, ignores webpsave's `strip` (fixed in 8.14.2): it writes EXIF,
// XMP and ICC chunks regardless, and rebuilds an EXIF block when the image has none. Drop those
// chunks from the RIFF container, and their flags from VP8X, ourselves.
static int webp_drop_metadata(guint8 *buf, size_t *len) {
    size_t in = 12, out = 12;
    if (*len < 12 || memcmp(buf, "RIFF", 4) || memcmp(buf + 8, "WEBP", 4))
        goto malformed;
    while (in + 8 <= *len) {
        guint32 size;
        memcpy(&size, buf + in + 4, 4);
        size = GUINT32_FROM_LE(size);
        size_t chunk = 8 + (size_t) size + (size & 1);
        if (chunk > *len - in)
            goto malformed;
        if (!memcmp(buf + in, "EXIF", 4) || !memcmp(buf + in, "XMP ", 4) ||
            !memcmp(buf + in, "ICCP", 4)) {
            in += chunk;
            continue;
        }
        if (!memcmp(buf + in, "VP8X", 4) && size > 0)
            buf[in + 8] &= ~(0x20 | 0x08 | 0x04);  // ICC, EXIF and XMP present
        memmove(buf + out, buf + in, chunk);
        in += chunk;
        out += chunk;
    }
    if (in != *len)
        goto malformed;
    guint32 riff = GUINT32_TO_LE((guint32) (out - 8));
    memcpy(buf + 4, &riff, 4);
    *len = out;
    return 0;
malformed:
    refuse("webpsave wrote a malformed RIFF container");
    return -1;
}

// Saves a copy without any metadata item, so that no saver can write one back: `strip` alone
// drops EXIF (and so GPS), XMP, IPTC, ICC and PNG text for JPEG and PNG, but see above for WebP.
// Progressive JPEG with optimised Huffman tables (smaller, shown sooner) for the renditions;
// the full-size original is baseline, since both options make libjpeg hold the whole image's
// coefficients (116 MB for 12 megapixels, against 43 MB streamed, and 0.4 s of CPU).
static int save(VipsImage *image, int format, int quality, gboolean progressive, void **out, size_t *out_len) {
    VipsImage *bare;
    if (vips_copy(image, &bare, NULL))
        return -1;
    gchar **fields = vips_image_get_fields(bare);
    for (int i = 0; fields[i]; i++)
        vips_image_remove(bare, fields[i]);  // a no-op for width, height and the other header fields
    g_strfreev(fields);

    int result;
    if (format == ORBIT_VIPS_JPEG)
        result = vips_jpegsave_buffer(bare, out, out_len, "Q", quality, "strip", TRUE,
                                      "optimize_coding", progressive, "interlace", progressive, NULL);
    else if (format == ORBIT_VIPS_WEBP)
        result = vips_webpsave_buffer(bare, out, out_len, "Q", quality, "strip", TRUE, NULL) ||
                 webp_drop_metadata(*out, out_len);
    else
        result = vips_pngsave_buffer(bare, out, out_len, "strip", TRUE, NULL);
    g_object_unref(bare);
    if (result) {
        g_free(*out);
        *out = NULL;
        *out_len = 0;
    }
    return result;
}

// Ends as 8-bit sRGB with an embedded ICC profile honoured, and for CMYK without one, libvips'
// built-in CMYK profile. A profile lcms refuses is ignored rather than failing the upload.
static int to_srgb(VipsImage *in, VipsImage **out) {
    gboolean cmyk = in->Type == VIPS_INTERPRETATION_CMYK;
    if (cmyk || vips_image_get_typeof(in, VIPS_META_ICC_NAME)) {
        if (!vips_icc_transform(in, out, "srgb", "embedded", TRUE,
                                "input_profile", cmyk ? "cmyk" : "srgb", NULL))
            return 0;
        vips_error_clear();
    }
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

int orbit_vips_thumbnail(const void *buf, size_t len, int width, int format, int quality,
                         void **out, size_t *out_len) {
    begin();
    *out = NULL;
    *out_len = 0;
    if (!valid_output(format, quality))
        return fail();
    if (width < 1) {
        refuse("width %d is not positive", width);
        return fail();
    }
    VipsImage *probe = open_accepted(buf, len);
    if (!probe)
        return fail();
    gboolean cmyk = probe->Type == VIPS_INTERPRETATION_CMYK;
    g_object_unref(probe);

    VipsObject *scope = VIPS_OBJECT(vips_image_new());
    VipsImage **t = (VipsImage **) vips_object_local_array(scope, 2);
    // Shrink-on-load, EXIF auto-rotation and first page only are vips_thumbnail's defaults.
    // 8.14's vips_thumbnail_buffer does not pass its fail_on to the loader: the option string does.
    // export_profile converts an ICC-tagged image (Display P3, Adobe RGB) to sRGB. 8.14 turns
    // CMYK into sRGB with its built-in profile, ignoring an embedded one, except in linear mode.
    // Linear gives up JPEG shrink-on-load, but for CMYK transforming every pixel costs more
    // anyway: a 12 MP CMYK JPEG takes 1.3 s to 1080 px either way (RGB: 0.17 s).
    int result = cmyk
        ? vips_thumbnail_buffer((void *) buf, len, &t[0], width, "height", 4 * width,
                                "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated",
                                "linear", TRUE, "import_profile", "cmyk",
                                "export_profile", "srgb", NULL)
        : vips_thumbnail_buffer((void *) buf, len, &t[0], width, "height", 4 * width,
                                "size", VIPS_SIZE_DOWN, "option_string", "fail_on=truncated",
                                "export_profile", "srgb", NULL);
    VipsImage *image = t[0];
    if (!result && format == ORBIT_VIPS_JPEG && vips_image_hasalpha(image)) {
        result = flatten_for_jpeg(image, &t[1]);
        image = t[1];
    }
    if (!result)
        result = save(image, format, quality, TRUE, out, out_len);
    g_object_unref(scope);
    return result ? fail() : 0;
}

int orbit_vips_original(const void *buf, size_t len, int format, int quality, void **out,
                        size_t *out_len) {
    begin();
    *out = NULL;
    *out_len = 0;
    if (!valid_output(format, quality))
        return fail();
    VipsObject *scope = VIPS_OBJECT(vips_image_new());
    VipsImage **t = (VipsImage **) vips_object_local_array(scope, 5);
    int result = -1;
    VipsImage *image = t[0] = open_accepted(buf, len);
    if (!image || to_srgb(image, &t[1]))
        goto done;
    image = t[1];
    if (format == ORBIT_VIPS_JPEG && vips_image_hasalpha(image)) {
        if (flatten_for_jpeg(image, &t[2]))
            goto done;
        image = t[2];
    }
    // Rotation reads the image out of order: decode it into memory first (as vips_thumbnail does).
    if (vips_image_get_orientation(image) != 1) {
        if (!(t[3] = vips_image_copy_memory(image)) || vips_autorot(t[3], &t[4], NULL))
            goto done;
        image = t[4];
    }
    result = save(image, format, quality, FALSE, out, out_len);
done:
    g_object_unref(scope);
    return result ? fail() : 0;
}

void orbit_vips_thread_shutdown(void) {
    vips_thread_shutdown();
#ifdef __GLIBC__
    // glibc keeps what a job freed in its thread's arena; without this the service's resident
    // size only grows (measured: 250 to 300 MB after a few dozen 12-megapixel images).
    malloc_trim(0);
#endif
}

size_t orbit_vips_tracked_mem(void) {
    return vips_tracked_get_mem();
}

void orbit_vips_free(void *buf) {
    g_free(buf);
}

size_t orbit_vips_last_error(char *buf, size_t len) {
    if (!thread_error[0])
        capture_error();
    size_t full = strlen(thread_error);
    if (len > 0)
        g_strlcpy(buf, thread_error, len);
    thread_error[0] = '\0';
    return full;
}
