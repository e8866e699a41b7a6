#!/usr/bin/env bash
# Generates the media service's test images into DIR (705 KB, about 6 s).
#   scripts/media/make_fixtures.sh DIR               every fixture
#   scripts/media/make_fixtures.sh --bombs-only DIR  bomb.png and bomb-full.png (python3 only)
#   scripts/media/make_fixtures.sh --bench DIR       also a 12 MP JPEG and a 12 MP iPhone-style HEIC
# Needs (Debian 12): libvips-tools libheif-examples libimage-exiftool-perl imagemagick python3.
# Python uses its standard library only. Content comes from ImageMagick's seeded plasma, so it
# compresses like a photo; a red square marks the stored top-left corner, so a test can tell
# which way an image was turned.
set -euo pipefail

bench=0 bombs_only=0
case ${1:-} in
--bench) bench=1 && shift ;;
--bombs-only) bombs_only=1 && shift ;;
esac
out=${1:?usage: make_fixtures.sh [--bench | --bombs-only] DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Decompression bombs: 14000x14000 RGB claims 588 MB once decoded. bomb.png stops after a
# few rows; bomb-full.png holds every row, all zero, deflated at level 9 (572 KB, ~2 s).
make_bombs() {
    python3 - "$out/bomb.png" "$out/bomb-full.png" <<'PY'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
side = 14000
def png(rows):
    deflate, row = zlib.compressobj(9), bytes(1 + 3 * side)
    idat = b"".join(deflate.compress(row) for _ in range(rows)) + deflate.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png(16))
open(sys.argv[2], "wb").write(png(side))
PY
}

if ((bombs_only)); then
    make_bombs
    exit
fi

for tool in vips:libvips-tools heif-enc:libheif-examples exiftool:libimage-exiftool-perl python3:python3; do
    command -v "${tool%%:*}" >/dev/null || { echo "make_fixtures: apt-get install ${tool#*:}" >&2; exit 1; }
done
# A stand-in `convert` can sit before ImageMagick on PATH: ask for the real one.
convert -version 2>/dev/null | grep -q ImageMagick || { echo "make_fixtures: apt-get install imagemagick" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# photo W H SEED FILE: photo-like RGB content, red square in the top-left corner.
photo() {
    convert -size "$1x$2" -seed "$3" plasma:fractal -blur 0x2 -fill red \
        -draw "rectangle 0,0 $(($1 / 8)),$(($1 / 8))" -alpha off "PNG24:$4"
}

# Personal data a served image must never carry.
private_tags=(-Make=Apple "-Model=iPhone 14 Pro" -GPSLatitude=48.858370 -GPSLatitudeRef=N
    -GPSLongitude=2.294481 -GPSLongitudeRef=E "-XMP-dc:Creator=OrbitCove Fixture"
    "-XMP-dc:Description=secret place")

# --- Accepted images -------------------------------------------------------------------------

# Stored 640x480, displayed 480x640 (Orientation 6: turn 90 degrees clockwise).
photo 640 480 7 base.png
vips copy base.png "$out/portrait-exif6.jpg[Q=75,strip]"
exiftool -q -overwrite_original "${private_tags[@]}" -Orientation#=6 \
    "-IPTC:By-line=OrbitCove Fixture" -IPTC:City=Paris "$out/portrait-exif6.jpg"

# -q -q: exiftool warns about the "Exif" prefix it writes into WebP itself.
vips copy base.png "$out/photo.webp[Q=60,strip]"
exiftool -q -q -overwrite_original "${private_tags[@]}" "$out/photo.webp"

# RGBA screenshot-like PNG: gradient, red corner, a transparent disc, and tEXt chunks.
python3 - "$work/photo.png" <<'PY'
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
w, h = 320, 240
rows, previous = [], bytes(4 * w)
for y in range(h):
    row = bytearray()
    for x in range(w):
        if x < 40 and y < 40:
            px = (255, 0, 0, 255)
        elif (x - 240) ** 2 + (y - 150) ** 2 < 40 ** 2:
            px = (0, 0, 0, 0)
        else:
            px = (40 + x * 200 // w, 80 + y * 150 // h, 200 - x * 150 // w, 255)
        row += bytes(px)
    # Filter "Up": each byte minus the one above, which a gradient turns into runs of zeros.
    rows.append(bytes([2]) + bytes((a - b) & 0xFF for a, b in zip(row, previous)))
    previous = row
text = [b"Comment\0OrbitCove secret comment", b"Author\0OrbitCove Fixture"]
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
       + b"".join(chunk(b"tEXt", t) for t in text)
       + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
PY
rm -f "$out/photo.png"
exiftool -q "${private_tags[@]}" -o "$out/photo.png" photo.png

# Three 160x120 frames, the red square moving along the top.
convert -delay 30 -loop 0 -size 160x120 \
    \( xc:'#2060c0' -fill red -draw 'rectangle 0,0 19,19' \) \
    \( xc:'#20a040' -fill red -draw 'rectangle 70,0 89,19' \) \
    \( xc:'#c08020' -fill red -draw 'rectangle 140,0 159,19' \) "$out/animated.gif"

# Colour-managed inputs, both to come out as sRGB. p3.jpg: Display P3 pixels with vips' built-in
# P3 profile embedded (ignoring it turns the red square 234,51,35). cmyk.jpg: CMYK without a
# profile, as many print files come.
photo 320 240 5 small.png
vips icc_transform small.png "$out/p3.jpg[Q=85]" p3
vips icc_transform small.png cmyk.v cmyk
vips copy cmyk.v "$out/cmyk.jpg[Q=80,strip]"

# iPhone-style HEIC. heif-enc 1.15 writes one top-level image per input and no grid, rotation
# or orientation; heic_grid re-packs its output as an iPhone does: hidden 512x512 HEVC tiles
# under a 'grid' primary item whose size crops them (here 1000x700 from 2x2 tiles), the ICC
# profile and an 'irot' of 90 degrees clockwise on the grid, a thumbnail, an 'Exif' item.
# Displayed: 700x1000, red square top-right.
cat >heic_grid.py <<'PY'
import struct, sys

def boxes(data, start=0, end=None):
    """(type, payload start, end) of each box in data[start:end]."""
    end = len(data) if end is None else end
    while start < end:
        size, kind = struct.unpack_from(">I4s", data, start)
        header = 8
        if size == 1:
            size, header = struct.unpack_from(">Q", data, start + 8)[0], 16
        elif size == 0:
            size = end - start
        yield kind.decode("latin-1"), start + header, start + size
        start += size

def child(data, start, end, kind):
    return next((s, e) for k, s, e in boxes(data, start, end) if k == kind)

def read_images(data):
    """(hvcC box, ispe box, coded bytes) of each image item heif-enc wrote, in item order."""
    _, meta, meta_end = next(b for b in boxes(data) if b[0] == "meta")
    meta += 4  # FullBox version and flags
    iprp, iprp_end = child(data, meta, meta_end, "iprp")
    props = [data[s - 8:e] for _, s, e in boxes(data, *child(data, iprp, iprp_end, "ipco"))]
    pos, _ = child(data, iprp, iprp_end, "ipma")
    wide = struct.unpack_from(">I", data, pos)[0] & 1
    count, pos = struct.unpack_from(">I", data, pos + 4)[0], pos + 8
    props_of = {}
    for _ in range(count):
        item, n = struct.unpack_from(">HB", data, pos)
        pos += 3
        for _ in range(n):
            index = (struct.unpack_from(">H", data, pos)[0] & 0x7FFF) if wide else data[pos] & 0x7F
            pos += 2 if wide else 1
            prop = props[index - 1]
            props_of.setdefault(item, {})[prop[4:8]] = prop
    pos, _ = child(data, meta, meta_end, "iloc")
    version, sizes = data[pos], data[pos + 4:pos + 6]
    field = {"offset": sizes[0] >> 4, "length": sizes[0] & 15, "base": sizes[1] >> 4}
    count, pos = struct.unpack_from(">H", data, pos + 6)[0], pos + 8
    def uint(size):
        nonlocal pos
        pos += size
        return int.from_bytes(data[pos - size:pos], "big")
    coded = {}
    for _ in range(count):
        item = uint(2)
        uint(2 if version in (1, 2) else 0)  # construction method: heif-enc writes file offsets
        uint(2)  # data reference index
        base, extents = uint(field["base"]), []
        for _ in range(uint(2)):
            offset, length = uint(field["offset"]), uint(field["length"])
            extents.append(data[base + offset:base + offset + length])
        coded[item] = b"".join(extents)
    return [(props_of[i][b"hvcC"], props_of[i][b"ispe"], coded[i]) for i in sorted(coded) if b"hvcC" in props_of.get(i, {})]

def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload

def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", version << 24 | flags) + payload)

def iphone_heic(images, icc, exif, rows, cols, width, height, irot):
    *tiles, (thumb_hvcc, thumb_ispe, thumb_data) = images
    assert len(tiles) == rows * cols, "one coded image per grid cell, then the thumbnail"
    assert len({t[:2] for t in tiles}) == 1, "tiles share one size and decoder configuration"
    grid_id, thumb_id, exif_id, tile_ids = 1, 2, 3, list(range(10, 10 + len(tiles)))
    props = [tiles[0][0], tiles[0][1], full_box("ispe", 0, 0, struct.pack(">II", width, height)),
             box("colr", b"prof" + icc), box("irot", bytes([irot])), thumb_hvcc, thumb_ispe]
    essential = 0x80  # decoder configuration and transformations must be understood
    links = [(grid_id, [3, 4, essential | 5]), (thumb_id, [essential | 6, 7, 4, essential | 5])]
    links += [(t, [essential | 1, 2]) for t in tile_ids]
    ipma = struct.pack(">I", len(links)) + b"".join(struct.pack(">HB", i, len(p)) + bytes(p) for i, p in links)
    iprp = box("iprp", box("ipco", b"".join(props)) + full_box("ipma", 0, 0, ipma))
    def infe(item, kind, hidden=False):
        return full_box("infe", 2, int(hidden), struct.pack(">HH4s", item, 0, kind.encode()) + b"\0")
    entries = [infe(grid_id, "grid"), infe(thumb_id, "hvc1"), infe(exif_id, "Exif")]
    entries += [infe(t, "hvc1", hidden=True) for t in tile_ids]
    iinf = full_box("iinf", 0, 0, struct.pack(">H", len(entries)) + b"".join(entries))
    def ref(kind, source, targets):
        return box(kind, struct.pack(">HH", source, len(targets)) + b"".join(struct.pack(">H", t) for t in targets))
    iref = full_box("iref", 0, 0, ref("dimg", grid_id, tile_ids) + ref("thmb", thumb_id, [grid_id])
                    + ref("cdsc", exif_id, [grid_id]))
    grid = struct.pack(">BBBBHH", 0, 0, rows - 1, cols - 1, width, height)  # ISO 23008-12 6.6.2.3
    payloads = [(t, c) for t, (_, _, c) in zip(tile_ids, tiles)]
    payloads += [(thumb_id, thumb_data), (exif_id, struct.pack(">I", 0) + exif)]
    def meta(mdat_start):
        # iloc version 1: the grid descriptor sits in idat (construction method 1), the rest in mdat.
        locs, offset = [struct.pack(">HHHHII", grid_id, 1, 0, 1, 0, len(grid))], mdat_start
        for item, payload in payloads:
            locs.append(struct.pack(">HHHHII", item, 0, 0, 1, offset, len(payload)))
            offset += len(payload)
        iloc = full_box("iloc", 1, 0, bytes([0x44, 0]) + struct.pack(">H", len(locs)) + b"".join(locs))
        hdlr = full_box("hdlr", 0, 0, struct.pack(">I4s12x", 0, b"pict") + b"\0")
        pitm = full_box("pitm", 0, 0, struct.pack(">H", grid_id))
        return full_box("meta", 0, 0, hdlr + pitm + iloc + iinf + iref + iprp + box("idat", grid))
    ftyp = box("ftyp", b"heic" + bytes(4) + b"mif1MiHEmiafMiHBheic")
    mdat_start = len(ftyp) + len(meta(0)) + 8  # offsets do not change the sizes
    return ftyp + meta(mdat_start) + box("mdat", b"".join(p for _, p in payloads))

parts, icc, exif, rows, cols, width, height, irot, out = sys.argv[1:]
images = read_images(open(parts, "rb").read())
heic = iphone_heic(images, open(icc, "rb").read(), open(exif, "rb").read(),
                   int(rows), int(cols), int(width), int(height), int(irot))
open(out, "wb").write(heic)
PY

# iphone_heic W H QUALITY FILE: a W x H photo in Display P3, stored landscape, shown portrait.
iphone_heic() {
    local w=$1 h=$2 rows=$((($2 + 511) / 512)) cols=$((($1 + 511) / 512)) tiles=()
    photo "$w" "$h" 11 src.png
    vips icc_transform src.png p3.v p3
    vips embed p3.v padded.v 0 0 $((cols * 512)) $((rows * 512)) --extend copy
    for ((r = 0; r < rows; r++)); do
        for ((c = 0; c < cols; c++)); do
            vips extract_area padded.v "tile-$r-$c.png" $((c * 512)) $((r * 512)) 512 512
            tiles+=("tile-$r-$c.png")
        done
    done
    vips thumbnail p3.v thumb.png 320
    heif-enc -q "$3" "${tiles[@]}" thumb.png -o parts.heic >/dev/null
    vips copy p3.v p3.jpg
    exiftool -b -ICC_Profile p3.jpg >p3.icc
    cp "$out/portrait-exif6.jpg" exif-source.jpg
    exiftool -q -overwrite_original "-ExifImageWidth=$w" "-ExifImageHeight=$h" exif-source.jpg
    exiftool -b -EXIF exif-source.jpg >exif.tiff  # GPS, Make, Model, Orientation 6
    python3 heic_grid.py parts.heic p3.icc exif.tiff "$rows" "$cols" "$w" "$h" 3 "$4"
}
iphone_heic 1000 700 45 "$out/photo.heic"

# AVIF, as recent Android phones and iOS share sheets send.
heif-enc -q 40 -o "$out/photo.avif" small.png >/dev/null

# A one-page PDF with an /Author; rendering it needs no font file (a drawn bar and a line).
python3 - "$out/receipt.pdf" <<'PY'
import sys
page = b"0.9 0.1 0.1 rg 50 700 200 60 re f 0 0 0 RG 4 w 50 650 m 545 650 l S"
objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
           b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
           b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
           b"<< /Length %d >>\nstream\n%s\nendstream" % (len(page), page),
           b"<< /Author (OrbitCove Fixture) /Title (Receipt 42) >>"]
pdf, offsets = bytearray(b"%PDF-1.4\n"), []
for number, body in enumerate(objects, 1):
    offsets.append(len(pdf))
    pdf += b"%d 0 obj\n%s\nendobj\n" % (number, body)
xref = len(pdf)
pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
pdf += b"".join(b"%010d 00000 n \n" % o for o in offsets)
pdf += b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
open(sys.argv[1], "wb").write(pdf)
PY

# --- Inputs to refuse, or to serve without their payload ---------------------------------------

vips copy small.png plain.jpg[Q=75,strip]
head -c $(($(stat -c %s plain.jpg) / 2)) plain.jpg >"$out/truncated.jpg"
: >"$out/empty.bin"
cp "$out/receipt.pdf" "$out/pdf-as.jpg"
vips copy small.png "$out/tiff.tif[compression=jpeg,Q=70]"
cat >"$out/svg.svg" <<'SVG'
<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="red"/><script>alert(1)</script></svg>
SVG

# A valid JPEG with a ZIP (holding an HTML page with a script) after its end-of-image marker.
python3 - plain.jpg "$out/polyglot.jpg" <<'PY'
import io, sys, zipfile
jpeg = open(sys.argv[1], "rb").read()
archive = io.BytesIO()
with zipfile.ZipFile(archive, "w") as z:
    page = zipfile.ZipInfo("index.html", date_time=(2024, 1, 1, 0, 0, 0))  # same bytes every run
    z.writestr(page, "<html><script>alert(document.cookie)</script></html>")
open(sys.argv[2], "wb").write(jpeg + archive.getvalue())
PY
# A valid GIF89a whose comment block holds a script, with HTML after its trailer.
convert -size 16x16 xc:orange -set comment '<html><script>alert(1)</script></html>' "$out/polyglot.gif"
printf '<html><script>alert(2)</script></html>\n' >>"$out/polyglot.gif"

make_bombs

# A small JPEG whose frame header (SOF) claims 30000x30000.
python3 - plain.jpg "$out/huge-dims.jpg" <<'PY'
import struct, sys
jpeg = bytearray(open(sys.argv[1], "rb").read())
pos = 2
while jpeg[pos + 1] not in (0xC0, 0xC1, 0xC2):
    assert jpeg[pos] == 0xFF, "lost in the JPEG markers"
    pos += 2 + struct.unpack_from(">H", jpeg, pos + 2)[0]
struct.pack_into(">HH", jpeg, pos + 5, 30000, 30000)  # after marker, length and precision
open(sys.argv[2], "wb").write(jpeg)
PY

if ((bench)); then
    # 12 MP as a phone takes it: 4000x3000 JPEG at Q90, and a 4032x3024 HEIC of 8x6 tiles.
    convert -size 4000x3000 -seed 3 plasma:fractal -blur 0x2 \
        \( -size 4000x3000 gradient:'#204080-#e0c080' \) -compose overlay -composite \
        -attenuate 0.4 +noise Gaussian -quality 90 "$out/bench-12mp.jpg"
    iphone_heic 4032 3024 50 "$out/bench-12mp.heic"
fi

ls -l "$out"
