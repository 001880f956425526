#!/usr/bin/env python3
"""Draws hookscope's application icon: a small autograd graph (three
Functions, edges flowing down) with a hook chip on the last one, on a dark
rounded square. Standard library only (zlib + struct write the PNG).

    scripts/make-icon.py [OUT_DIR]      # default: assets/icons

writes hookscope-256.png and hookscope-48.png (installed into
share/icons/hicolor/<size>/apps/hookscope.png).
"""
import math
import os
import struct
import sys
import zlib

SS = 4  # supersampling per axis, for anti-aliased edges

BG = (0x1f, 0x24, 0x30)
EDGE = (0x8a, 0x96, 0xab)
NODE = (0x4c, 0x8d, 0xf6)
LEAF = (0x3f, 0xb9, 0x8a)
HOOK = (0xf5, 0x9e, 0x2b)
RING = (0xe8, 0xec, 0xf2)


def inside_rounded_rect(x, y, x0, y0, x1, y1, r):
    if x < x0 or x > x1 or y < y0 or y > y1:
        return False
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def dist_to_segment(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def shade(u, v):
    """Colour and alpha at (u, v) in [0, 1]^2, painter's order."""
    colour, alpha = None, 0.0
    if inside_rounded_rect(u, v, 0.03, 0.03, 0.97, 0.97, 0.18):
        colour, alpha = BG, 1.0
    else:
        return None, 0.0
    nodes = [(0.30, 0.27, LEAF), (0.70, 0.27, LEAF), (0.50, 0.52, NODE), (0.50, 0.78, NODE)]
    edges = [(0, 2), (1, 2), (2, 3)]
    for a, b in edges:
        ax, ay, _ = nodes[a]
        bx, by, _ = nodes[b]
        if dist_to_segment(u, v, ax, ay, bx, by) < 0.028:
            colour = EDGE
    for x, y, c in nodes:
        if math.hypot(u - x, v - y) < 0.105:
            colour = c
    # The hook: a chip on the last Function, ringed so it reads as "watched".
    hx, hy = 0.66, 0.70
    d = math.hypot(u - hx, v - hy)
    if d < 0.075:
        colour = RING if d > 0.052 else HOOK
    return colour, alpha


def render(size):
    n = size * SS
    rows = []
    for py in range(size):
        row = bytearray([0])  # filter: none
        for px in range(size):
            r = g = b = a = 0.0
            for sy in range(SS):
                for sx in range(SS):
                    c, al = shade((px * SS + sx + 0.5) / n, (py * SS + sy + 0.5) / n)
                    if c is None:
                        continue
                    r += c[0] * al
                    g += c[1] * al
                    b += c[2] * al
                    a += al
            k = SS * SS
            if a > 0:
                row += bytes([round(r / a), round(g / a), round(b / a), round(255 * a / k)])
            else:
                row += bytes(4)
        rows.append(bytes(row))
    return b"".join(rows)


def png(size, pixels):
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(pixels, 9)) + chunk(b"IEND", b""))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "assets", "icons")
    os.makedirs(out, exist_ok=True)
    for size in (256, 48):
        path = os.path.join(out, "hookscope-%d.png" % size)
        with open(path, "wb") as f:
            f.write(png(size, render(size)))
        print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
