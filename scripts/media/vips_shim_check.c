// Exercises Shared/CVipsShims on the fixtures from make_fixtures.sh and says what happened.
//
//   scripts/media/make_fixtures.sh /tmp/media-fixtures
//   gcc -std=c11 -O2 -Wall -I Shared/CVipsShims/include scripts/media/vips_shim_check.c
//       Shared/CVipsShims/orbit_vips.c $(pkg-config --cflags --libs vips) -o /tmp/vips_shim_check
//   /tmp/vips_shim_check /tmp/media-fixtures [OUT_DIR] [--loops N] [--decode-bomb]
//
// OUT_DIR receives every output for a look. --loops runs N thumbnail+original rounds to watch
// RSS (default 500; 0 skips). --decode-bomb finally decodes bomb-full.png without the shim, to
// show what the header check saves. Ends with "N passed, N failed". A fixture missing from the
// folder is skipped: valgrind 3.19 dies inside libdav1d, so leave photo.avif out under it, and
// set VIPS_NOVECTOR=1 (valgrind cannot run orc's generated code).
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <vips/vips.h>

#include "orbit_vips.h"

static int passed, failed;
static const char *fixtures, *out_dir;

static void check(gboolean ok, const char *what, const char *file) {
    if (ok)
        passed++;
    else {
        failed++;
        printf("  FAIL %s: %s\n", file, what);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long peak_rss_kb(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

static long rss_kb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static gchar *read_fixture(const char *name, gsize *len) {
    gchar *path = g_build_filename(fixtures, name, NULL), *data = NULL;
    if (!g_file_get_contents(path, &data, len, NULL)) {
        fprintf(stderr, "cannot read %s: run make_fixtures.sh first\n", path);
        exit(2);
    }
    g_free(path);
    return data;
}

static const char *last_error(void) {
    static _Thread_local char message[512];
    orbit_vips_last_error(message, sizeof message);
    for (char *c = message; *c; c++)
        if (*c == '\n')
            *c = ' ';
    return message;
}

// What each fixture must give. Probe points are fractions of the displayed image.
typedef struct {
    const char *file;
    const char *loader;          // NULL: refused at the header
    int width, height, pages, orientation;
    gboolean decodes;            // thumbnail and original succeed
    int shown_w, shown_h;        // upright size of the original
    double red_x, red_y;         // where the red square shows; < 0: none
    int max_green;               // red's green channel at most (P3 unmanaged would give ~51)
    double hole_x, hole_y;       // a transparent pixel (white in JPEG); < 0: none
} Fixture;

#define JPEG "VipsForeignLoadJpegBuffer"
#define PNG "VipsForeignLoadPngBuffer"
#define PDF "VipsForeignLoadPdfBuffer"
#define NONE -1, -1
static const Fixture table[] = {
    {"portrait-exif6.jpg", JPEG, 640, 480, 1, 6, TRUE, 480, 640, 0.97, 0.03, 45, NONE},
    {"photo.png", PNG, 320, 240, 1, 1, TRUE, 320, 240, 0.03, 0.03, 45, 0.75, 0.625},
    {"photo.webp", "VipsForeignLoadWebpBuffer", 640, 480, 1, 1, TRUE, 640, 480, 0.03, 0.03, 45, NONE},
    {"animated.gif", "VipsForeignLoadNsgifBuffer", 160, 120, 3, 1, TRUE, 160, 120, 0.03, 0.03, 45, NONE},
    {"photo.heic", "VipsForeignLoadHeifBuffer", 700, 1000, 1, 1, TRUE, 700, 1000, 0.97, 0.03, 45, NONE},
    {"photo.avif", "VipsForeignLoadHeifBuffer", 320, 240, 1, 1, TRUE, 320, 240, 0.03, 0.03, 45, NONE},
    {"p3.jpg", JPEG, 320, 240, 1, 1, TRUE, 320, 240, 0.03, 0.03, 20, NONE},
    {"cmyk.jpg", JPEG, 320, 240, 1, 1, TRUE, 320, 240, 0.03, 0.03, 45, NONE},
    // PDFs are refused: receipts are stored as uploaded, and poppler parses nothing a stranger sent.
    {"receipt.pdf", NULL, 0, 0, 0, 0, FALSE, 0, 0, NONE, 0, NONE},
    {"pdf-as.jpg", NULL, 0, 0, 0, 0, FALSE, 0, 0, NONE, 0, NONE},
    {"polyglot.jpg", JPEG, 320, 240, 1, 1, TRUE, 320, 240, 0.03, 0.03, 45, NONE},
    {"polyglot.gif", "VipsForeignLoadNsgifBuffer", 16, 16, 1, 1, TRUE, 16, 16, NONE, 0, NONE},
    {"truncated.jpg", JPEG, 320, 240, 1, 1, FALSE, 0, 0, NONE, 0, NONE},
    {"huge-dims.jpg", JPEG, 30000, 30000, 1, 1, FALSE, 0, 0, NONE, 0, NONE},
    {"bomb.png", PNG, 14000, 14000, 1, 1, FALSE, 0, 0, NONE, 0, NONE},
    {"bomb-full.png", PNG, 14000, 14000, 1, 1, FALSE, 0, 0, NONE, 0, NONE},
    {"empty.bin", NULL, 0, 0, 0, 0, FALSE, 0, 0, NONE, 0, NONE},
    {"tiff.tif", NULL, 0, 0, 0, 0, FALSE, 0, 0, NONE, 0, NONE},
    {"svg.svg", NULL, 0, 0, 0, 0, FALSE, 0, 0, NONE, 0, NONE},
};

// Bytes that betray metadata or a payload: format markers, then the fixtures' own strings.
static const char *const leaks[] = {
    "Exif", "EXIF", "eXIf", "http://ns.adobe.com/xap", "XMP ", "iTXt", "tEXt", "zTXt",
    "Photoshop 3.0", "8BIM", "ICC_PROFILE", "ICCP", "iCCP", "Apple", "iPhone", "OrbitCove",
    "Paris", "secret", "<script", "<html", "PK\x03\x04",
};

// Names the leaks found in an output, or returns FALSE and prints nothing.
static gboolean find_leaks(const void *buf, size_t len, GString *found) {
    for (size_t i = 0; i < G_N_ELEMENTS(leaks); i++)
        if (memmem(buf, len, leaks[i], strlen(leaks[i])))
            g_string_append_printf(found, " \"%s\"", leaks[i]);
    return found->len > 0;
}

static const char *const format_name[] = {"jpeg", "webp", "png"};

// Decodes our own output (JPEG, WebP and PNG stay unblocked) and checks it against the fixture.
static void inspect(const Fixture *f, const char *what, int format, void *buf, size_t len,
                    int want_w, int want_h) {
    char label[128];
    snprintf(label, sizeof label, "%s %s", what, format_name[format]);
    VipsImage *image = vips_image_new_from_buffer(buf, len, "", NULL);
    if (!image) {
        check(FALSE, "output does not decode", f->file);
        vips_error_clear();
        return;
    }
    GString *found = g_string_new(NULL);
    gboolean leaked = find_leaks(buf, len, found);
    gboolean icc = vips_image_get_typeof(image, VIPS_META_ICC_NAME) != 0;
    printf("  %-14s %4dx%-4d %-5s %d bands %s%7zu B  %s", label, image->Xsize, image->Ysize,
           vips_enum_nick(VIPS_TYPE_INTERPRETATION, image->Type), image->Bands,
           icc ? "ICC " : "", len, leaked ? "LEAKS" : "clean");
    if (leaked)
        printf(":%s", found->str);
    check(!leaked, "metadata or payload in output", f->file);
    check(abs(image->Xsize - want_w) <= 1 && abs(image->Ysize - want_h) <= 1, "output size", f->file);
    check(image->Type == VIPS_INTERPRETATION_sRGB && !icc, "output not plain sRGB", f->file);
    check(format != 0 || image->Bands == 3, "JPEG output with alpha", f->file);

    double *px;
    int n;
    if (f->red_x >= 0 && !vips_getpoint(image, &px, &n, (int) (f->red_x * image->Xsize),
                                        (int) (f->red_y * image->Ysize), NULL)) {
        printf("  red=(%.0f,%.0f,%.0f)", px[0], px[1], px[2]);
        check(px[0] >= 225 && px[1] <= f->max_green && px[2] <= 50, "red square not red there", f->file);
        g_free(px);
    }
    if (f->hole_x >= 0 && !vips_getpoint(image, &px, &n, (int) (f->hole_x * image->Xsize),
                                         (int) (f->hole_y * image->Ysize), NULL)) {
        printf("  hole=(%.0f,%.0f,%.0f", px[0], px[1], px[2]);
        printf(n > 3 ? ",a=%.0f)" : ")", n > 3 ? px[3] : 0.0);
        check(n > 3 ? px[3] == 0 : px[0] >= 245 && px[1] >= 245 && px[2] >= 245,
              "transparency lost (JPEG: not on white)", f->file);
        g_free(px);
    }
    printf("\n");
    if (out_dir) {
        gchar *name = g_strdup_printf("%s/%s.%s.%s", out_dir, f->file, what, format_name[format]);
        g_file_set_contents(name, buf, len, NULL);
        g_free(name);
    }
    g_string_free(found, TRUE);
    g_object_unref(image);
}

static void header_of(const Fixture *f, const gchar *data, gsize len) {
    int w = 0, h = 0, pages = 0, orientation = 0;
    char loader[64] = "";
    long rss_before = peak_rss_kb();
    double start = now();
    int result = orbit_vips_header(data, len, &w, &h, &pages, &orientation, loader, sizeof loader);
    double ms = (now() - start) * 1000;
    long grew = peak_rss_kb() - rss_before;
    if (result) {
        printf("  header         refused in %.2f ms: %s\n", ms, last_error());
        check(f->loader == NULL, "header refused an accepted image", f->file);
        return;
    }
    printf("  header         %dx%d pages=%d orientation=%d %s in %.2f ms, peak RSS +%ld KB\n",
           w, h, pages, orientation, loader, ms, grew);
    check(f->loader && strcmp(loader, f->loader) == 0, "loader", f->file);
    check(w == f->width && h == f->height && pages == f->pages && orientation == f->orientation,
          "header values", f->file);
    // The bombs decode to 588 MB (14000²) and 2.7 GB (30000²): a header read must not.
    check(ms < 100 && grew < 20 * 1024, "header read cost like a decode", f->file);
}

static void fixture(const Fixture *f) {
    gsize len;
    gchar *path = g_build_filename(fixtures, f->file, NULL);
    gboolean present = g_file_test(path, G_FILE_TEST_EXISTS);
    g_free(path);
    if (!present) {
        printf("%s skipped: not in %s\n", f->file, fixtures);  // as under valgrind, for AVIF
        return;
    }
    gchar *data = read_fixture(f->file, &len);
    printf("%s (%zu bytes)\n", f->file, (size_t) len);
    header_of(f, data, len);

    for (int format = 0; format < 3; format++) {
        void *out;
        size_t out_len;
        double start = now();
        int result = orbit_vips_thumbnail(data, len, 320, format, 80, &out, &out_len);
        if (result) {
            printf("  thumbnail %-4s failed in %.1f ms: %s\n", format_name[format],
                   (now() - start) * 1000, last_error());
            check(!f->decodes, "thumbnail failed", f->file);
        } else {
            check(f->decodes, "thumbnail of an image to refuse", f->file);
            int want_w = MIN(320, f->shown_w);
            int want_h = f->shown_w > 320 ? (int) (f->shown_h * 320.0 / f->shown_w + 0.5) : f->shown_h;
            inspect(f, "thumbnail", format, out, out_len, want_w, want_h);
            orbit_vips_free(out);
        }
        start = now();
        result = orbit_vips_original(data, len, format, 85, &out, &out_len);
        if (result) {
            printf("  original %-5s failed in %.1f ms: %s\n", format_name[format],
                   (now() - start) * 1000, last_error());
            check(!f->decodes, "original failed", f->file);
        } else {
            check(f->decodes, "original of an image to refuse", f->file);
            inspect(f, "original", format, out, out_len, f->shown_w, f->shown_h);
            orbit_vips_free(out);
        }
        if (!f->decodes && !f->loader)
            break;  // refused at the door: once is enough
    }
    orbit_vips_thread_shutdown();
    g_free(data);
}

// The second wall: libvips itself refuses blocked loaders, even when asked directly.
static void blocked_loaders(void) {
    printf("blocked loaders, called directly (bypassing the shim's sniffing)\n");
    static const unsigned char bmp[] = {
        'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0,
        24, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 0};
    const char *names[] = {"tiff.tif", "svg.svg"};
    for (int i = 0; i < 3; i++) {
        gsize len = sizeof bmp;
        gchar *data = i < 2 ? read_fixture(names[i], &len) : g_memdup2(bmp, sizeof bmp);
        const char *loader = vips_foreign_find_load_buffer(data, len);
        VipsImage *image = vips_image_new_from_buffer(data, len, "", NULL);
        char *message = vips_error_buffer_copy();
        g_strstrip(message);
        printf("  %-9s sniffed as %s: %s\n", i < 2 ? names[i] : "BMP", loader ? loader : "?",
               image ? "LOADED" : message);
        check(!image && strstr(message, "blocked"), "blocked loader ran", i < 2 ? names[i] : "BMP");
        if (image)
            g_object_unref(image);
        g_free(message);
        g_free(data);
    }
    gchar *dir = g_dir_make_tmp("shimcheck-XXXXXX", NULL);
    const char *files[][2] = {{"m.mat", "2 2\n1 2\n3 4\n"}, {"c.csv", "1,2\n3,4\n"}};
    for (int i = 0; i < 2; i++) {
        gchar *path = g_build_filename(dir, files[i][0], NULL);
        g_file_set_contents(path, files[i][1], -1, NULL);
        VipsImage *image = vips_image_new_from_file(path, NULL);
        char *message = vips_error_buffer_copy();
        g_strstrip(message);
        printf("  %-9s from a file: %s\n", files[i][0], image ? "LOADED" : message);
        check(!image && strstr(message, "blocked"), "blocked file loader ran", files[i][0]);
        if (image)
            g_object_unref(image);
        g_free(message);
        g_unlink(path);
        g_free(path);
    }
    g_rmdir(dir);
    g_free(dir);
}

static void error_truncation(void) {
    char tiny[8];
    int w, h, p, o;
    orbit_vips_header("", 0, &w, &h, &p, &o, NULL, 0);
    size_t full = orbit_vips_last_error(tiny, sizeof tiny);
    printf("last_error into 8 bytes: \"%s\" of %zu; then \"", tiny, full);
    check(full > 7 && strlen(tiny) == 7, "last_error truncation", "last_error");
    full = orbit_vips_last_error(tiny, sizeof tiny);
    printf("%s\" (cleared)\n", tiny);
    check(full == 0, "last_error not cleared", "last_error");
}

// Bytes malloc has handed out and not had back (glibc; 0 under another allocator).
static long heap_in_use_kb(void) {
    struct mallinfo2 m = mallinfo2();
    return (long) ((m.uordblks + m.hblkhd) / 1024);
}

// Rounds of the worker's real job. A leak shows as heap in use growing through the second half.
// RSS is printed too, but under glibc it creeps up in steps as the arenas fragment (about
// 20 MB per 1000 rounds here, with the heap in use flat); under jemalloc it stays flat.
static void loops(int rounds) {
    const char *names[] = {"portrait-exif6.jpg", "photo.heic", "photo.png", "bomb.png"};
    gsize lens[4];
    gchar *data[4];
    for (int i = 0; i < 4; i++)
        data[i] = read_fixture(names[i], &lens[i]);
    long half_rss = 0, half_heap = 0;
    double start = now();
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < 4; i++) {
            void *out;
            size_t len;
            int format = round % 2 ? ORBIT_VIPS_WEBP : ORBIT_VIPS_JPEG;
            if (!orbit_vips_thumbnail(data[i], lens[i], 320, format, 80, &out, &len))
                orbit_vips_free(out);
            if (!orbit_vips_original(data[i], lens[i], format, 85, &out, &len))
                orbit_vips_free(out);
        }
        last_error();
        orbit_vips_thread_shutdown();
        if (round == rounds / 2) {
            half_rss = rss_kb();
            half_heap = heap_in_use_kb();
        }
    }
    long rss = rss_kb(), heap = heap_in_use_kb();
    printf("%d rounds of 4 thumbnails + 4 originals in %.1f s; from round %d to %d: heap in use "
           "%ld -> %ld KB, RSS %ld -> %ld KB; tracked %zu B\n", rounds, now() - start, rounds / 2,
           rounds, half_heap, heap, half_rss, rss, orbit_vips_tracked_mem());
    if (rounds >= 100)
        check(heap ? heap - half_heap < 1024 : rss - half_rss < 4 * 1024, "memory grows", "loops");
    check(orbit_vips_tracked_mem() == 0, "pixel memory still tracked", "loops");
    for (int i = 0; i < 4; i++)
        g_free(data[i]);
}

// Two workers at once, one of them failing all the time: each reads its own errors.
static void *worker(void *arg) {
    const char *name = arg;
    gsize len;
    gchar *data = read_fixture(name, &len);
    int ok = 0;
    for (int i = 0; i < 40; i++) {
        void *out;
        size_t out_len;
        if (!orbit_vips_thumbnail(data, len, 200, ORBIT_VIPS_WEBP, 75, &out, &out_len)) {
            orbit_vips_free(out);
            ok++;
        } else if (strstr(last_error(), "unsupported"))
            ok++;
        orbit_vips_thread_shutdown();
    }
    g_free(data);
    return GINT_TO_POINTER(ok);
}

static void threads(void) {
    pthread_t a, b;
    void *ok_a, *ok_b;
    pthread_create(&a, NULL, worker, "photo.heic");
    pthread_create(&b, NULL, worker, "svg.svg");
    pthread_join(a, &ok_a);
    pthread_join(b, &ok_b);
    printf("2 threads x 40 jobs: %d heic thumbnails, %d svg refusals with their own error\n",
           GPOINTER_TO_INT(ok_a), GPOINTER_TO_INT(ok_b));
    check(GPOINTER_TO_INT(ok_a) == 40 && GPOINTER_TO_INT(ok_b) == 40, "threads", "threads");
}

// What the header check saves: libvips decoding the bomb, with nothing in the way. Streaming
// (as a thumbnail reads) costs CPU; holding it (as a rotation needs) costs 588 MB.
static void decode_bomb(void) {
    gsize len;
    gchar *data = read_fixture("bomb-full.png", &len);
    vips_operation_block_set("VipsForeignLoadPngBuffer", FALSE);
    for (int hold = 0; hold < 2; hold++) {
        long before = peak_rss_kb();
        double start = now(), avg = 0;
        VipsImage *image = vips_image_new_from_buffer(data, len, "", NULL), *memory = NULL;
        int result = !image || (hold ? !(memory = vips_image_copy_memory(image))
                                     : vips_avg(image, &avg, NULL));
        printf("bomb-full.png %s without the shim: %s in %.1f s, peak RSS +%ld MB\n",
               hold ? "decoded into memory" : "streamed", result ? "failed" : "done",
               now() - start, (peak_rss_kb() - before) / 1024);
        if (memory)
            g_object_unref(memory);
        if (image)
            g_object_unref(image);
    }
    g_free(data);
}

int main(int argc, char **argv) {
    int rounds = 500;
    gboolean bomb = FALSE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--loops") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--decode-bomb"))
            bomb = TRUE;
        else if (!fixtures)
            fixtures = argv[i];
        else
            out_dir = argv[i];
    }
    if (!fixtures) {
        fprintf(stderr, "usage: %s FIXTURE_DIR [OUT_DIR] [--loops N] [--decode-bomb]\n", argv[0]);
        return 2;
    }
    if (out_dir)
        g_mkdir_with_parents(out_dir, 0755);
    if (orbit_vips_init(argv[0])) {
        fprintf(stderr, "init: %s\n", last_error());
        return 1;
    }
    printf("libvips %s, PDF loader: %s\n", vips_version_string(),
           g_type_from_name(PDF) ? "poppler" : "none");
    // Bombs first, while the peak RSS is still low enough to show a header read's cost.
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
            if ((pass == 0) == (strstr(table[i].file, "bomb") || strstr(table[i].file, "huge")))
                fixture(&table[i]);
    blocked_loaders();
    error_truncation();
    threads();
    if (rounds > 0)
        loops(rounds);
    if (bomb)
        decode_bomb();
    printf("%d passed, %d failed\n", passed, failed);
    vips_shutdown();
    return failed ? 1 : 0;
}
