#!/usr/bin/env bash
# Media benchmark (issue 24): thumbnails of 12-megapixel JPEGs through the media service's
# worker beside vipsthumbnail and ImageMagick on the same files, the worker's peak memory, and
# uploads of 5 MB files through the gateway, in one run.
#
#   scripts/bench/media.sh [IMAGES] [ROUNDS] [UPLOADS] [CLIENTS]   (40 3 16 4)
#
# ORBITCOVE_MEDIA_WORKERS (2, the service's default) sets the worker's images at once, and the
# references' processes. Generates IMAGES distinct 4000×3000 JPEGs that compress like photos
# (Perlin-noise colour fields, fine texture and a gradient, with grain of their own each, Q90,
# about 3.5 MB), and UPLOADS files of 5,000,000 random bytes, in a temporary folder removed at
# the end. Installs libvips-tools, imagemagick and time from Debian if missing. Starts the local
# stack with release builds, rate limits raised out of the way (so stop yours first: make
# down), then:
#   references, once, with the stack idle: vipsthumbnail making what the worker makes of each
#     image (job_work below), in one process with libvips' own threads and in WORKERS processes
#     of one thread each (as the worker runs: vips_concurrency_set(1), WORKERS jobs at once);
#     plain vipsthumbnail making one 1,080 px JPEG of each, both ways; ImageMagick's
#     `convert -thumbnail` making the same, both ways, on the first CONVERT_IMAGES images only
#     (it takes seconds an image); and each one's peak RSS on one image (GNU time);
#   uploads: UPLOADS upload URLs (POST /api/v1/media/upload), then their PUTs with curl, with
#     exactly the headers answered, sequential on one connection and from CLIENTS clients at
#     once, through nginx (8080) and straight to the media service (8084, the same signed
#     URLs), for MB/s. The bytes are random, so the worker refuses each after reading and
#     hashing it (not a JPEG) and the figure is the upload path's, not shared with libvips;
#   rounds, alternating: the WORKERS-process vipsthumbnail reference, then the worker: IMAGES
#     upload URLs, IMAGES PUTs through the gateway from CLIENTS clients while the outbox relays
#     are held (so the jobs wait), then the relays let go and the worker left to drain the
#     IMAGES jobs queued: the same work as the reference's, timed from the rows' own times (see
#     worker_figures for why);
#   once more, the worker left alone (worker-interleaved): the same uploads with nothing held,
#     processing from the first upload on beside the others, as it runs in use; its rate from
#     the first upload's completion, and how long each image took to be ready after its upload.
# Reports the media process's resident memory: idle after start, and its peak (VmHWM, reset
# through /proc/PID/clear_refs before each phase) during the 5 MB uploads, and in each of the
# worker's runs while the images were uploaded and from then until drained. Checks one image's
# large rendition (a 302 to a signed URL serving a JPEG 1,080 px wide), deletes what it uploaded
# through the API (the sweep removes the files on the stack's next run), prints a summary, the
# commands it ran and the machine's facts, and stops the stack. Sends traffic to loopback only
# and ends by itself (each wait has a deadline). MB is 10^6 bytes throughout.
set -euo pipefail
cd "$(dirname "$0")/../.."
SELF="$PWD/scripts/bench/media.sh"

WIDTH=4000
HEIGHT=3000
UPLOAD_BYTES=5000000
# Debian's ImageMagick, whatever else is first on PATH.
CONVERT=/usr/bin/convert
TIME=/usr/bin/time

# --- what the reference processes run (the script calls itself: media.sh job KIND OUT ARG...) ---

# The worker's renditions of each image (MediaProcessor.renditions through orbit_vips.c): thumb
# (200 px) and large (1,080 px) wide, each as JPEG (Q82, progressive, optimised Huffman tables)
# and WebP (Q80), made by vips_thumbnail with export_profile srgb as the worker calls it (8.14
# converts even an untagged image then); and the original re-encoded whole (Q90, baseline, so it
# streams; no profile conversion for an sRGB image). vipsthumbnail at the image's own width
# does not resize: its output is byte for byte that of `vips copy "in.jpg[access=sequential]"
# "out.jpg[Q=90,strip]"`. Five outputs an image,
# four of them thumbnails; one process per kind of output for all of a share's files, so
# libvips' start-up (40 ms, which the worker pays once) is paid five times a share, not five
# times an image.
job_work() {
    local out=$1
    shift
    vipsthumbnail --size '200x>' -e srgb -o "$out/%s-thumb.jpg[Q=82,strip,optimize_coding,interlace]" "$@"
    vipsthumbnail --size '200x>' -e srgb -o "$out/%s-thumb.webp[Q=80,strip]" "$@"
    vipsthumbnail --size '1080x>' -e srgb -o "$out/%s-large.jpg[Q=82,strip,optimize_coding,interlace]" "$@"
    vipsthumbnail --size '1080x>' -e srgb -o "$out/%s-large.webp[Q=80,strip]" "$@"
    vipsthumbnail --size "${WIDTH}x>" -o "$out/%s-original.jpg[Q=90,strip]" "$@"
}

# One 1,080 px JPEG of each image, as anyone would run vipsthumbnail.
job_single() {
    local out=$1
    shift
    vipsthumbnail --size 1080x -o "$out/%s-1080.jpg[Q=82,strip]" "$@"
}

# The same with ImageMagick (at the worker's quality, 82, rather than the input's 90), one
# process an image as convert works.
job_convert() {
    local out=$1 file
    shift
    for file; do
        "$CONVERT" "$file" -thumbnail 1080x -quality 82 "$out/$(basename "$file" .jpg)-convert.jpg"
    done
}

# OUT/photo-INDEX.jpg for each INDEX: OUT/base.v with grain of its own (seeded by INDEX, so
# the same every run) and a brightness of its own.
job_photo() {
    local out=$1 index name
    shift
    for index; do
        name=$(printf 'photo-%04d' "$index")
        vips gaussnoise "$out/$name-grain.v" "$WIDTH" "$HEIGHT" --mean=$((index % 9 * 3 - 12)) --sigma 6 \
            --seed "$index"
        vips add "$out/base.v" "$out/$name-grain.v" "$out/$name-sum.v"
        vips cast "$out/$name-sum.v" "$out/$name.jpg[Q=90]" uchar
        rm -f "$out/$name-grain.v" "$out/$name-sum.v"
    done
}

# Each LINE (media_seed.py request: id, file, URL, headers, tab-separated) as one PUT of the
# file with exactly the headers answered; all of them in one curl, which keeps its connection
# from one to the next as an app's client would. `Expect:` only stops curl from waiting for a
# 100 Continue before the body. One line per PUT: id, status, bytes sent, seconds.
job_put() {
    shift # OUT: unused
    local line header
    local -a fields args=()
    for line; do
        IFS=$'\t' read -r -a fields <<<"$line"
        ((${#args[@]} == 0)) || args+=(--next)
        args+=(-sS -o /dev/null -T "${fields[1]}" -H 'Expect:')
        for header in "${fields[@]:3}"; do args+=(-H "$header"); done
        args+=(-w "${fields[0]} %{http_code} %{size_upload} %{time_total}\n" "${fields[2]}")
    done
    curl "${args[@]}"
}

if [[ ${1:-} == job ]]; then
    "job_$2" "${@:3}"
    exit
fi

# --- the benchmark -------------------------------------------------------------------------

IMAGES=${1:-40}
ROUNDS=${2:-3}
UPLOADS=${3:-16}
CLIENTS=${4:-4}
WORKERS=${ORBITCOVE_MEDIA_WORKERS:-2}
for value in "$IMAGES" "$ROUNDS" "$UPLOADS" "$CLIENTS" "$WORKERS"; do
    [[ $value =~ ^[0-9]+$ ]] || { sed -n '6p' "$SELF" >&2; exit 2; }
done
if ((IMAGES < 10 || IMAGES > 200 || ROUNDS < 1 || ROUNDS > 10 || UPLOADS < 1 || UPLOADS > 100 ||
    CLIENTS < 1 || CLIENTS > 16 || WORKERS < 1 || WORKERS > 16)); then
    echo "IMAGES 10-200, ROUNDS 1-10, UPLOADS 1-100, CLIENTS 1-16, ORBITCOVE_MEDIA_WORKERS 1-16" >&2
    exit 2
fi
CONVERT_IMAGES=$((IMAGES < 8 ? IMAGES : 8))

# Before a minute of generating images: start_release_stack would refuse anyway.
if (echo >/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
    echo "the gateway is already running: stop the stack first (make down); this benchmark starts its own" >&2
    exit 1
fi

# What the references need, from Debian, if missing (as lib.sh installs wrk).
install_missing() {
    local -a missing=()
    local attempt tool
    for tool in vips vipsthumbnail vipsheader; do
        command -v "$tool" >/dev/null || { missing+=(libvips-tools) && break; }
    done
    [[ -x $CONVERT ]] || missing+=(imagemagick)
    [[ -x $TIME ]] || missing+=(time)
    ((${#missing[@]} > 0)) || return 0
    for attempt in 1 2 3; do
        if apt-get update -q >&2 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
            return 0
        fi
        echo "apt-get failed (attempt $attempt of 3)" >&2
        sleep $((attempt * 10))
    done
    echo "could not install ${missing[*]}" >&2
    exit 1
}
install_missing

work=$(mktemp -d)
# The psql holding the relays' lock (hold_relays), if one is: a run that stops while holding
# lets the relays go at once (the stack stops next).
holder=
stop_helpers() {
    if [[ -n $holder ]]; then
        touch "$work/release"
        wait "$holder" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop_helpers EXIT
# So that Ctrl-C or a kill still runs the EXIT trap (and with it, later, the stack's stop).
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$work/photos" "$work/uploads" "$work/out"
results="$work/results"
: >"$results"

echo "generating $IMAGES ${WIDTH}×${HEIGHT} JPEGs and $UPLOADS files of $UPLOAD_BYTES random bytes ..." >&2
(
    cd "$work/photos"
    vips perlin red.v "$WIDTH" "$HEIGHT" --cell-size 600 --seed 1
    vips perlin green.v "$WIDTH" "$HEIGHT" --cell-size 600 --seed 2
    vips perlin blue.v "$WIDTH" "$HEIGHT" --cell-size 600 --seed 3
    vips perlin texture.v "$WIDTH" "$HEIGHT" --cell-size 24 --seed 4
    vips xyz xy.v "$WIDTH" "$HEIGHT"
    vips extract_band xy.v x.v 0
    vips bandjoin "red.v green.v blue.v" fields.v
    vips linear fields.v fields-scaled.v 100 104
    vips linear texture.v texture-scaled.v 18 0
    vips linear x.v gradient.v 0.012 0
    vips add fields-scaled.v texture-scaled.v textured.v
    vips add textured.v gradient.v sum.v
    vips cast sum.v base.v uchar
    rm -f red.v green.v blue.v texture.v xy.v x.v fields.v fields-scaled.v texture-scaled.v textured.v \
        gradient.v sum.v
)
seq "$IMAGES" | xargs -n $(((IMAGES + $(nproc) - 1) / $(nproc))) -P "$(nproc)" "$SELF" job photo "$work/photos"
rm -f "$work/photos/base.v"
photos=("$work/photos"/photo-*.jpg)
((${#photos[@]} == IMAGES)) || { echo "made ${#photos[@]} images, not $IMAGES" >&2; exit 1; }
printf '%s\n' "${photos[@]}" >"$work/photos.list"
for index in $(seq -w "$UPLOADS"); do
    # Sixteen zero bytes first, so no file can start like an image by chance.
    { head -c 16 /dev/zero && head -c $((UPLOAD_BYTES - 16)) /dev/urandom; } >"$work/uploads/random-$index.bin"
done
printf '%s\n' "$work/uploads"/random-*.bin >"$work/uploads.list"
PHOTO_MB=$(du -cb "${photos[@]}" | awk -v n="$IMAGES" 'END { printf "%.2f", $1 / n / 1e6 }')

export ORBITCOVE_MEDIA_WORKERS=$WORKERS ORBITCOVE_MEDIA_WRITES_PER_MINUTE=1000000000 \
    ORBITCOVE_MEDIA_READS_PER_MINUTE=1000000000
# shellcheck source=scripts/bench/lib.sh
source scripts/bench/lib.sh
start_release_stack

# The media service's pid (stack.sh records it in .local/pids/media.pid), checked to be it.
media_pid() {
    local pid
    pid=$(head -n 1 .local/pids/media.pid)
    if [[ ! $pid =~ ^[0-9]+$ ]] || ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF orbitcove-media; then
        echo "no orbitcove-media behind .local/pids/media.pid" >&2
        exit 1
    fi
    echo "$pid"
}
# memory_mb FIELD: VmRSS (now) or VmHWM (the peak since start or the last reset) of the media
# service, in MB.
memory_mb() {
    awk -v field="$1:" '$1 == field { printf "%.1f", $2 * 1024 / 1e6 }' "/proc/$(media_pid)/status"
}
# Sets the peak (VmHWM) back to the current RSS (Linux 4.0+), so the next reading is this
# phase's peak; where that is refused, readings are peaks since start, and say so.
PEAK_SINCE="the last reset"
reset_peak() {
    echo 5 2>/dev/null >"/proc/$(media_pid)/clear_refs" || PEAK_SINCE="the service's start (clear_refs refused)"
}
IDLE_MB=$(memory_mb VmRSS)

echo "signing in and making a community ..." >&2
eval "$(python3 scripts/bench/media_seed.py setup "$work")"
wait_for_queues

echo "# $(date -u +%FT%TZ) $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')," \
    "$(awk '/^MemTotal/ { printf "%.0f GB", $2 * 1024 / 1e9 }' /proc/meminfo)), Linux $(uname -r); $(vips --version)," \
    "ImageMagick $("$CONVERT" -version | sed -n '1s/^Version: ImageMagick \([^ ]*\).*/\1/p')," \
    "$(curl --version | head -n 1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | cut -d' ' -f3)," \
    "$(swift --version 2>/dev/null | grep -o 'Swift version [0-9.]*' | head -n 1)"
echo "# scripts/bench/media.sh $IMAGES $ROUNDS $UPLOADS $CLIENTS; ORBITCOVE_MEDIA_WORKERS=$WORKERS;" \
    "$IMAGES images ${WIDTH}×${HEIGHT} JPEG Q90, $PHOTO_MB MB each on average; uploads of $UPLOAD_BYTES bytes;" \
    "convert on $CONVERT_IMAGES images"

# reference NAME KIND COUNT PROCESSES OUTPUTS THUMBNAILS [ROUND]: job_KIND over the first COUNT
# images, their files shared among PROCESSES processes (one libvips or ImageMagick thread each
# when more than one, as the worker's jobs run; the tools' own default otherwise), timed by the
# same clock as the rest; OUTPUTS files an image expected, THUMBNAILS of them thumbnails.
reference() {
    local name=$1 kind=$2 count=$3 processes=$4 outputs=$5 thumbnails=$6 round=${7:-0}
    local started ended seconds made user system threads=default
    local -a single=()
    if ((processes > 1)); then
        single=(VIPS_CONCURRENCY=1 MAGICK_THREAD_LIMIT=1)
        threads=1
    fi
    rm -rf "$work/out" && mkdir "$work/out"
    started=$(date +%s.%N)
    head -n "$count" "$work/photos.list" |
        env "${single[@]}" "$TIME" -f '%U %S' -o "$work/time.out" \
            xargs -d '\n' -n $(((count + processes - 1) / processes)) -P "$processes" \
            "$SELF" job "$kind" "$work/out"
    ended=$(date +%s.%N)
    made=$(find "$work/out" -type f | wc -l)
    ((made == count * outputs)) || { echo "$name made $made files, not $((count * outputs))" >&2; exit 1; }
    seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN { print b - a }')
    read -r user system <"$work/time.out"
    awk -v name="$name" -v round="$round" -v count="$count" -v processes="$processes" -v threads="$threads" \
        -v seconds="$seconds" -v thumbnails="$thumbnails" -v outputs="$outputs" \
        -v user_s="$user" -v system_s="$system" '
        BEGIN {
            rate = count / seconds
            printf "client=%s round=%d images=%d processes=%d threads=%s seconds=%.2f images_per_s=%.3f ",
                name, round, count, processes, threads, seconds, rate
            printf "thumbnails_per_s=%.2f renditions_per_s=%.2f cpu_s_per_image=%.3f\n",
                rate * thumbnails, rate * outputs, (user_s + system_s) / count
        }' | tee -a "$results"
}

# peak NAME COMMAND...: the command's peak RSS (the largest of its processes'), in MB.
peak() {
    local name=$1
    shift
    rm -rf "$work/out" && mkdir "$work/out"
    "$TIME" -f '%M' -o "$work/rss.out" "$@" >/dev/null
    awk -v name="$name" '{ printf "client=rss-%s peak_mb=%.1f\n", name, $1 * 1024 / 1e6 }' "$work/rss.out" |
        tee -a "$results"
}

echo
echo "## references (stack idle)"
reference vipsthumbnail-work-1 work "$IMAGES" 1 5 4
reference vipsthumbnail-work work "$IMAGES" "$WORKERS" 5 4
reference vipsthumbnail-1080-1 single "$IMAGES" 1 1 1
reference vipsthumbnail-1080 single "$IMAGES" "$WORKERS" 1 1
reference convert-1080-1 convert "$CONVERT_IMAGES" 1 1 1
reference convert-1080 convert "$CONVERT_IMAGES" "$WORKERS" 1 1
peak vipsthumbnail-1080 vipsthumbnail "${photos[0]}" --size 1080x -o "$work/out/%s-1080.jpg[Q=82,strip]"
peak vipsthumbnail-work env VIPS_CONCURRENCY=1 "$SELF" job work "$work/out" "${photos[0]}"
peak convert-1080 "$CONVERT" "${photos[0]}" -thumbnail 1080x -quality 82 "$work/out/convert.jpg"

# wait_processed TAG COUNT: until the COUNT rows of TAG are ready or failed. Polls PostgreSQL
# once a second (a psql costs a few ms of CPU; the figures come from the rows' times, not from
# when the poll saw them); a run that does not finish within a minute plus ten seconds an
# image fails.
wait_processed() {
    local tag=$1 count=$2 finished deadline=$((SECONDS + 60 + $2 * 10))
    while ((SECONDS < deadline)); do
        finished=$(owner_psql -c "SELECT count(*) FROM media WHERE community_id = '$COMMUNITY'
            AND filename LIKE '$tag-%' AND status IN ('ready', 'failed')")
        ((finished >= count)) && return 0
        sleep 1
    done
    echo "the worker did not finish $tag within $((60 + count * 10)) s:" >&2
    owner_psql -c "SELECT status, count(*) FROM media WHERE community_id = '$COMMUNITY' AND filename LIKE '$tag-%'
        GROUP BY status" >&2
    exit 1
}

# put_all TAG CLIENTS: the PUTs of TAG.urls (media_seed.py request) shared among CLIENTS curls
# at once, their lines to TAG.puts; sets PUT_SECONDS, the wall clock they took. Fails the run
# unless every one answered 201.
put_all() {
    local started ended
    started=$(date +%s.%N)
    xargs -d '\n' -n $((($(wc -l <"$work/$1.urls") + $2 - 1) / $2)) -P "$2" "$SELF" job put - \
        <"$work/$1.urls" >"$work/$1.puts" || true
    ended=$(date +%s.%N)
    PUT_SECONDS=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.3f", b - a }')
    if [[ $(awk '$2 == 201' "$work/$1.puts" | wc -l) != $(wc -l <"$work/$1.urls") ]]; then
        echo "not every PUT of $1 answered 201 (id, status, bytes, seconds):" >&2
        awk '$2 != 201' "$work/$1.puts" | head -n 5 >&2
        exit 1
    fi
}

# upload_figures CLIENT CLIENTS PUTS SECONDS: one result line: MB/s over the wall clock, each
# PUT's median seconds, and any answer other than 201.
upload_figures() {
    sort -k4,4n "$3" | awk -v client="$1" -v clients="$2" -v seconds="$4" '
        { bytes += $3; times[NR] = $4; if ($2 != 201) errors++ }
        END {
            printf "client=%s clients=%d files=%d megabytes=%.1f seconds=%.2f mb_per_s=%.1f p50_s=%.3f errors=%d\n",
                client, clients, NR, bytes / 1e6, seconds, bytes / 1e6 / seconds, times[int((NR + 1) / 2)], errors + 0
        }' |
        tee -a "$results"
}

echo
echo "## uploads of $UPLOAD_BYTES-byte files"
reset_peak
for target in gateway direct; do
    for clients in 1 "$CLIENTS"; do
        tag="upload-$target-$clients"
        python3 scripts/bench/media_seed.py request "$work" "$tag" "$target" "$work/uploads.list" "$work/$tag.urls"
        put_all "$tag" "$clients"
        upload_figures "upload-$target" "$clients" "$work/$tag.puts" "$PUT_SECONDS"
        # Refused by the worker (not an image) before the next run, so each run has the service to itself.
        wait_processed "$tag" "$UPLOADS"
    done
done
echo "client=rss-media-uploads peak_mb=$(memory_mb VmHWM)" | tee -a "$results"

# The outbox relays' claim lock (OutboxRelay.claimLockKey, read from its source as finances.sh
# reads its SQL): every relay takes it, waiting, for each claim.
RELAY_KEY=$(sed -n 's/^ *static let claimLockKey: Int64 = \(0x[0-9A-Fa-f_]*\).*/\1/p' \
    Shared/OrbitCoveInfra/Messaging/OutboxRelay.swift | tr -d _)
[[ $RELAY_KEY =~ ^0x[0-9A-Fa-f]+$ ]] || { echo "OutboxRelay.claimLockKey is no longer a hex literal" >&2; exit 1; }
RELAY_KEY=$((RELAY_KEY))
# At most this long: a relay's claim waits inside its transaction's statement_timeout (30 s).
HOLD_SECONDS=20

# hold_relays: takes the relays' claim lock in a psql of our own, so while it is held the PUTs
# complete and queue their jobs in the outbox but no relay publishes them, and the worker gets
# none yet. Released by release_relays, or by itself after HOLD_SECONDS; the session ends then.
hold_relays() {
    rm -f "$work/held" "$work/release"
    owner_psql -v ON_ERROR_STOP=1 >"$work/hold.out" 2>&1 <<SQL &
SELECT pg_advisory_lock($RELAY_KEY);
\! touch '$work/held'; timeout $HOLD_SECONDS sh -c 'until [ -e "$work/release" ]; do sleep 0.02; done' || true
SELECT 'released', extract(epoch FROM clock_timestamp()), pg_advisory_unlock($RELAY_KEY);
SQL
    holder=$!
    local deadline=$((SECONDS + 10))
    until [[ -e $work/held ]]; do
        ((SECONDS < deadline)) || { echo "could not take the relays' lock:" >&2; cat "$work/hold.out" >&2; exit 1; }
        sleep 0.05
    done
}
# release_relays: lets the relays go; RELEASED is when, on PostgreSQL's clock (epoch seconds).
release_relays() {
    touch "$work/release"
    wait "$holder" || { echo "the psql holding the relays' lock failed:" >&2; cat "$work/hold.out" >&2; exit 1; }
    holder=
    RELEASED=$(sed -n 's/^released|\([0-9.]*\)|.*/\1/p' "$work/hold.out")
}
# worker_figures CLIENT ROUND RELEASED STARTED UPLOADED PEAK_UPLOADS PEAK_DRAIN RSS_BEFORE
# RSS_AFTER: the run's result line, from the rows' own times on PostgreSQL's clock: uploaded_at
# is set as a PUT completes (in the transaction that queues its job), processed_at as the worker
# records the outcome, after the renditions are stored.
#
# What is fair. Left alone, the worker starts on the first image as soon as its upload
# completes, while the other PUTs still arrive and are hashed and written by the same process
# on the same cores, and the local store's file writes share the worker's threads (its
# BlockingPool): a PUT's write waits behind the images queued there, so uploads and processing
# interleave to the end and no window holds the worker's work alone. So in each round the relays
# are held (hold_relays) while all the PUTs complete: the jobs wait in the outbox, and at the
# release the worker finds IMAGES jobs queued with nothing else to do, as the reference finds
# IMAGES files. Its rate is IMAGES / (last processed_at - the release), the relay's publishing
# and the broker included: the same work in the same wall clock as the reference's. RELEASED
# empty: the interleaved run, figured from the first upload's completion instead (its rate a
# lower bound of the worker's, with the time each image took to be ready after its upload).
worker_figures() {
    local client=$1 tag=$1-$2 row
    row=$(owner_psql -c "SELECT count(*), count(*) FILTER (WHERE status = 'ready'),
            extract(epoch FROM min(uploaded_at)),
            string_agg(extract(epoch FROM processed_at)::text, ' '),
            string_agg(extract(epoch FROM processed_at - uploaded_at)::text, ' ')
        FROM media WHERE community_id = '$COMMUNITY' AND filename LIKE '$tag-%'")
    row+="|$(owner_psql -c "SELECT count(*) FROM media m, jsonb_object_keys(m.variants)
        WHERE m.community_id = '$COMMUNITY' AND m.filename LIKE '$tag-%'")"
    python3 - "${@:2}" "$row" "$client" <<'PY' | tee -a "$results"
import statistics, sys
round_, released, started, uploaded, peak_uploads, peak_drain, rss_before, rss_after, row, client = sys.argv[1:11]
rows, ready, first_up, done, waited, renditions = row.split("|")
rows, ready, renditions = int(rows), int(ready), int(renditions)
times = sorted(float(value) for value in done.split())
waits = sorted(float(value) for value in waited.split())
start = float(released or first_up)
before = sum(1 for moment in times if moment <= start)
seconds = times[-1] - start
rate = (rows - before) / seconds
per_image = renditions / ready
print(f"client={client} round={round_} images={rows} ready={ready} renditions={renditions} seconds={seconds:.2f}",
      f"images_per_s={rate:.3f} thumbnails_per_s={rate * (per_image - 1):.2f} renditions_per_s={rate * per_image:.2f}",
      f"processed_before_window={before} upload_seconds={float(uploaded) - float(started):.2f}",
      f"ready_after_upload_p50_s={statistics.median(waits):.2f} ready_after_upload_max_s={waits[-1]:.2f}",
      f"peak_uploads_mb={peak_uploads} peak_drain_mb={peak_drain} rss_before_mb={rss_before} rss_after_mb={rss_after}")
if ready != rows:
    sys.exit(f"{client} {round_}: {rows - ready} of {rows} images failed")
if released and before:
    sys.exit(f"{client} {round_}: {before} images were processed while the relays were held: the hold did not hold")
PY
}

# worker_run CLIENT ROUND HOLD: IMAGES upload URLs, their PUTs from CLIENTS clients (the relays
# held meanwhile when HOLD is `hold`), then the worker left to drain; the result line, and what
# each part of the stack spent while uploading and until drained (% of one core).
worker_run() {
    local client=$1 round=$2 tag=$1-$2 started uploaded drained rss_before peak_uploads
    python3 scripts/bench/media_seed.py request "$work" "$tag" gateway "$work/photos.list" "$work/$tag.urls"
    rss_before=$(memory_mb VmRSS)
    RELEASED=
    if [[ $3 == hold ]]; then hold_relays; fi
    reset_peak
    cpu_snapshot >"$work/cpu.start"
    started=$(date +%s.%N)
    put_all "$tag" "$CLIENTS"
    uploaded=$(date +%s.%N)
    cpu_snapshot >"$work/cpu.uploaded"
    peak_uploads=$(memory_mb VmHWM)
    reset_peak
    if [[ $3 == hold ]]; then
        if ((${PUT_SECONDS%.*} >= HOLD_SECONDS)); then
            echo "the PUTs took ${PUT_SECONDS} s, past the relays' hold of $HOLD_SECONDS s: use fewer IMAGES" >&2
            exit 1
        fi
        release_relays
    fi
    # The photos' PUTs: in the uploads table at the end.
    upload_figures "upload-photos-$3" "$CLIENTS" "$work/$tag.puts" "$PUT_SECONDS" >/dev/null
    wait_processed "$tag" "$IMAGES"
    drained=$(date +%s.%N)
    cpu_snapshot >"$work/cpu.drained"
    worker_figures "$client" "$round" "$RELEASED" "$started" "$uploaded" "$peak_uploads" "$(memory_mb VmHWM)" \
        "$rss_before" "$(memory_mb VmRSS)"
    cpu_used "$work/cpu.start" "$work/cpu.uploaded" "$PUT_SECONDS" | sed 's/cpu (/cpu while uploading (/'
    cpu_used "$work/cpu.uploaded" "$work/cpu.drained" \
        "$(awk -v a="$uploaded" -v b="$drained" 'BEGIN { print b - a }')" | sed 's/cpu (/cpu until drained (/'
}

echo
echo "## rounds: the reference ($WORKERS processes of one thread), then the worker ($WORKERS at once)"
for round in $(seq "$ROUNDS"); do
    wait_for_queues
    reference vipsthumbnail-work work "$IMAGES" "$WORKERS" 5 4 "$round"
    worker_run worker "$round" hold
done
echo
echo "## the worker left alone: processing from the first upload on, beside the uploads"
wait_for_queues
worker_run worker-interleaved 1 interleaved

# One image as a member sees it: a 302 to a signed URL serving a JPEG 1,080 px wide.
large_id=$(head -n 1 "$work/worker-1.urls" | cut -f1)
checked=$(python3 scripts/bench/media_seed.py check "$work" "$large_id" "$work/large.jpg")
large_size=$(vipsheader -f width "$work/large.jpg")x$(vipsheader -f height "$work/large.jpg")
echo "# checked: $checked; the large rendition is a $(vipsheader -f vips-loader "$work/large.jpg") of $large_size"
[[ $large_size == 1080x810 ]] || { echo "the large rendition is $large_size, not 1080x810" >&2; exit 1; }

echo
echo "## summary (medians over rounds; MB = 10^6 bytes)"
python3 - "$results" "$IDLE_MB" "$PEAK_SINCE" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    if "client" in fields:
        runs.setdefault(fields["client"], []).append(fields)
def median(rows, key):
    return statistics.median(float(row[key]) for row in rows)
print("\n| client | processes × threads | images | images/s | thumbnails/s | renditions/s | CPU s per image | runs |")
print("|---|---|---|---|---|---|---|---|")
for client, rows in runs.items():
    if "images_per_s" in rows[0]:
        shape = f"{rows[0]['processes']} × {rows[0]['threads']}" if "processes" in rows[0] else "media service"
        cpu = f"{median(rows, 'cpu_s_per_image'):.3f}" if "cpu_s_per_image" in rows[0] else ""
        print(f"| {client} | {shape} | {rows[0]['images']} | {median(rows, 'images_per_s'):.3f} "
              f"| {median(rows, 'thumbnails_per_s'):.2f} | {median(rows, 'renditions_per_s'):.2f} | {cpu} "
              f"| {len(rows)} |")
worker, alone = runs.get("worker", []), runs.get("worker-interleaved", [])
reference = [row for row in runs.get("vipsthumbnail-work", []) if row["round"] != "0"]
if worker and reference:
    ratios = [float(ours["images_per_s"]) / float(theirs["images_per_s"]) for ours, theirs in zip(worker, reference)]
    print(f"\nworker / vipsthumbnail-work ({reference[0]['processes']} processes, the same round): per round",
          ", ".join(f"{ratio:.2f}" for ratio in ratios), f"(median {statistics.median(ratios):.2f});",
          "target at least 0.90")
if alone and reference:
    print(f"worker-interleaved / vipsthumbnail-work (median of the rounds): "
          f"{float(alone[0]['images_per_s']) / median(reference, 'images_per_s'):.2f}; each image ready",
          f"{alone[0]['ready_after_upload_p50_s']} s after its upload (median),",
          f"{alone[0]['ready_after_upload_max_s']} s at most")
single, magick = runs.get("vipsthumbnail-1080"), runs.get("convert-1080")
if single and magick:
    print("convert -thumbnail's rate / vipsthumbnail's, one 1,080 px JPEG an image,",
          f"{single[0]['processes']} processes: {median(magick, 'images_per_s') / median(single, 'images_per_s'):.2f}")
print(f"\n| memory | MB |\n|---|---|\n| media service idle after start (VmRSS) | {sys.argv[2]} |")
if "rss-media-uploads" in runs:
    print(f"| media service, peak during the 5 MB uploads (VmHWM) | {runs['rss-media-uploads'][0]['peak_mb']} |")
for client, rows in (("worker", worker), ("worker-interleaved", alone)):
    for key, label in (("rss_before_mb", "resident before (VmRSS)"),
                       ("peak_uploads_mb", "peak while the images were uploaded"),
                       ("peak_drain_mb", "peak from then until drained"),
                       ("rss_after_mb", "resident after (VmRSS)")):
        if rows:
            print(f"| media service, {client}: {label} | {', '.join(row[key] for row in rows)} |")
for client, label in (("rss-vipsthumbnail-1080", "vipsthumbnail, one 1,080 px JPEG of one image"),
                      ("rss-vipsthumbnail-work", "vipsthumbnail, the worker's renditions of one image (largest step)"),
                      ("rss-convert-1080", "convert -thumbnail, one image")):
    if client in runs:
        print(f"| {label} | {runs[client][0]['peak_mb']} |")
if worker or alone:
    peak = max(float(row[key]) for row in worker + alone for key in ("peak_uploads_mb", "peak_drain_mb"))
    print(f"\nthe media service's peak in the worker's runs: {peak:.1f} MB (each a peak since {sys.argv[3]});",
          "target under 200 MB:", "met" if peak < 200 else "NOT MET")
print("\n| uploads | clients | files | MB/s | median s per PUT | errors |\n|---|---|---|---|---|---|")
for client, rows in runs.items():
    for row in rows if client.startswith("upload-") else []:
        print(f"| {client} | {row['clients']} | {row['files']} | {row['mb_per_s']} | {row['p50_s']} "
              f"| {row['errors']} |")
PY

echo
echo "## commands"
printf '%s\n' "# each reference: head -n COUNT photos.list | [VIPS_CONCURRENCY=1 MAGICK_THREAD_LIMIT=1 when more than" \
    "# one process] /usr/bin/time -f '%U %S' xargs -d '\n' -n COUNT/PROCESSES -P PROCESSES media.sh job KIND OUT:"
declare -f job_work job_single job_convert job_put job_photo | sed 's/^/    /'
echo "# the worker: media_seed.py request (POST /api/v1/media/upload for each image through the gateway), then" \
    "job_put from $CLIENTS clients at once, the outbox relays held (SELECT pg_advisory_lock($RELAY_KEY)) until" \
    "the last PUT answered; figures from the media rows' uploaded_at, processed_at, status and variants"

echo "deleting what the benchmark uploaded ..." >&2
python3 scripts/bench/media_seed.py delete "$work" "$work"/*.urls >&2 || true
