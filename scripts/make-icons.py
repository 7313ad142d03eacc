"""Draws the web app's icons (Sources/CountersignWebClient/web/icons/): a white check mark on the accent
blue, full bleed, so one image serves as `any` and `maskable` (the mark stays inside the 80% safe zone).
Pure Python (zlib), no imaging library: `python3 scripts/make-icons.py` writes them again."""
import math
import pathlib
import struct
import zlib

BLUE = (0x1F, 0x6F, 0xEB)
WHITE = (0xFF, 0xFF, 0xFF)
# The check mark's two strokes, in units of the icon's side.
STROKES = [((0.30, 0.52), (0.44, 0.66)), ((0.44, 0.66), (0.71, 0.37))]
WIDTH = 0.085


def distance(p, a, b):
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def pixel(x, y, size):
    # 4x4 samples per pixel for smooth edges.
    covered = 0
    for sy in range(4):
        for sx in range(4):
            p = ((x + (sx + 0.5) / 4) / size, (y + (sy + 0.5) / 4) / size)
            if min(distance(p, a, b) for a, b in STROKES) <= WIDTH / 2:
                covered += 1
    f = covered / 16
    return bytes(round(BLUE[i] * (1 - f) + WHITE[i] * f) for i in range(3))


def png(size):
    rows = b"".join(b"\x00" + b"".join(pixel(x, y, size) for x in range(size)) for y in range(size))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


out = pathlib.Path(__file__).resolve().parent.parent / "Sources/CountersignWebClient/web/icons"
out.mkdir(exist_ok=True)
for size in (192, 512):
    (out / f"icon-{size}.png").write_bytes(png(size))
