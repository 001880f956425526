"""The GUI opens traces recorded from real PyTorch programs (under Xvfb):
the DDP rebuild (#21344, both ranks merged), the module hook of #25723 and a
program with every Python hook kind. Each screenshot is non-blank and the
view it describes has Functions with hook chips. Skipped (exit 77) when the
GUI is not built or xvfb-run is missing."""

import os
import shutil
import subprocess
import unittest
import zlib

import torch_util as tu
import test_ddp_rebuild
import test_module_hooks
import test_record

GUI = os.environ.get("HOOKSCOPE_GUI", "")


def read_png(path):
    """(width, height, RGBA rows) of an 8-bit RGB/RGBA PNG, decoded here
    (no imaging library in the test's dependencies)."""
    data = open(path, "rb").read()
    tu.expect(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour = (int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big"),
                                   body[8], body[9])
            tu.expect(depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}")
            bpp = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def distinct_colours(png):
    w, h, bpp, rows = png
    seen = set()
    for y in range(0, h, 3):
        row = rows[y]
        for x in range(0, w, 5):
            seen.add(row[x * bpp:x * bpp + 3])
    return len(seen)


def screenshot(traces, at, name):
    png = os.path.join(tu.OUT, name)
    if os.path.exists(png):
        os.remove(png)
    r = subprocess.run(["xvfb-run", "-a", GUI, *traces, "--at", str(at), "--screenshot", png],
                       capture_output=True, text=True, timeout=180)
    tu.expect(r.returncode == 0 and f"wrote {png}" in r.stdout, f"GUI failed: {r.stdout}{r.stderr}")
    return r.stdout, read_png(png)


def check_view(traces, name, want_hooks=True):
    ev = tu.events(traces[0]) if len(traces) == 1 else None
    n = len(ev) if ev else None
    if ev is None:
        # Several ranks merge into one timeline: the last event of the merged trace.
        code, info = tu.cli("info", *traces)
        n = int(next(l for l in info.splitlines() if " events over " in l).split()[0])
        at = n - 1
    else:
        at = max(e["index"] for e in ev if e["kind"] == "hook_fire")
    said, png = screenshot(traces, at, name)
    hooks = int(said.split(" hooks attached")[0].split()[-1])
    boxes = int(said.split(" boxes")[0].split()[-1])
    tu.expect(boxes > 0, f"{name}: the graph should show Functions: {said}")
    tu.expect(hooks > 0 or not want_hooks, f"{name}: hook chips on Functions expected: {said}")
    tu.expect(distinct_colours(png) > 50, f"{name}: the screenshot looks blank")


def setUpModule():
    if not GUI or not os.path.exists(GUI) or shutil.which("xvfb-run") is None:
        raise unittest.SkipTest("the GUI is not built or xvfb-run is missing")


class GuiTest(unittest.TestCase):
    def test_ddp_rebuild_in_gui(self):
        prefix = test_ddp_rebuild.run("kept")
        check_view([f"{prefix}.rank0.hstrace", f"{prefix}.rank1.hstrace"], "gui_ddp_kept.png")

    def test_25723_in_gui(self):
        out = os.path.join(tu.OUT, "gui_25723.hstrace")
        test_module_hooks.record_25723(out)
        # At the stale fire the module hook is already removed: the view shows
        # the BackwardHookFunction graph it fired through (module hooks have no
        # Function of their own, Note [Module hooks in traces]).
        check_view([out], "gui_25723.png", want_hooks=False)

    def test_hooks_program_in_gui(self):
        out = os.path.join(tu.OUT, "gui_hooks.hstrace")
        r = test_record.record(os.path.join(test_record.HERE, "programs", "hooks_program.py"), out, "2",
                               os.path.join(tu.OUT, "gui_hooks.json"))
        tu.expect(r.returncode == 3, r.stderr)
        check_view([out], "gui_hooks.png")


if __name__ == "__main__":
    tu.main()
