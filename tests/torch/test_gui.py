"""The GUI opens traces recorded from real PyTorch programs (under Xvfb):
the DDP rebuild (#21344, both ranks merged), the module hook of #25723 and a
program with every Python hook kind. Each screenshot is non-blank and the
view it describes has Functions with hook chips. A 2-rank DDP program's
timeline (ranks by hand, mp.spawn, a rank killed) gives the training most of
its width (Note [Start-up band]). Skipped (exit 77) when the GUI is not
built or xvfb-run is missing."""

import glob
import json
import os
import sys
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


HERE = os.path.dirname(os.path.abspath(__file__))
DDP_STEPS = os.path.join(HERE, "programs", "ddp_steps.py")


def record_ddp_steps(name, by_hand=True, program=DDP_STEPS, **env):
    """Records `program` (programs/ddp_steps.py) on 2 ranks through `python -m
    hookscope.record`; returns its rank traces."""
    out = os.path.join(tu.OUT, f"{name}.hstrace")
    for old in glob.glob(os.path.join(tu.OUT, f"{name}.*hstrace")):
        os.remove(old)
    base = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(tu.free_port()),
                USE_LIBUV="0", **{k: str(v) for k, v in env.items()})
    cmd = [sys.executable, "-m", "hookscope.record", "-o", out, program]
    if by_hand:
        procs = [subprocess.Popen(cmd, env=dict(base, RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for r in range(2)]
        said = [procs[0].communicate(timeout=240)[0]]
        if env.get("HANG_RANK1_AT") is not None:
            procs[1].kill()  # stopped (SIGSTOP) since its step; rank 0 is done with it
        said.append(procs[1].communicate(timeout=240)[0])
    else:
        r = subprocess.run(cmd, env=dict(base, SPAWN="1"), capture_output=True, text=True, timeout=240)
        said = [r.stdout + r.stderr]
    traces = sorted(glob.glob(os.path.join(tu.OUT, f"{name}.rank*.hstrace")))  # mp.spawn's parent writes one too
    tu.expect(len(traces) == 2, f"{name}: two rank traces expected, got {traces}: {said}")
    return traces


def timeline_report(traces, name, size="1280x800", args=()):
    """The GUI's draw report (Note [Draw report]) at `size` after opening `traces` (with `args`)."""
    png, rep = os.path.join(tu.OUT, f"{name}.png"), os.path.join(tu.OUT, f"{name}.json")
    r = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", GUI, "--size", size, *args, *traces,
                        "--screenshot", png], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, HOOKSCOPE_DRAW_REPORT=rep))
    tu.expect(r.returncode == 0, f"GUI failed: {r.stdout}{r.stderr}")
    with open(rep) as f:
        return json.load(f)


def check_training_width(report, name, waits=()):
    """Note [Start-up band]: from the first backward to the last event, the
    training takes 60% of the timeline or more; a start-up band (events
    inside) is collapsed and labelled; `waits`: labels other bands must have."""
    x0, x1 = report["timeline_plot"]
    t0, t1 = report["timeline_training"]
    share = (t1 - t0) / (x1 - x0)
    gaps = report["timeline_gaps"]
    tu.expect(share >= 0.6, f"{name}: the training gets {share:.0%} of the timeline; gaps {gaps}")
    for g in gaps:
        tu.expect(g["collapsed"] and g["x1"] - g["x0"] <= 0.1 * (x1 - x0), f"{name}: a narrow collapsed band: {g}")
        if g["events"] > 0:
            tu.expect(g["label"].endswith(" start-up") and g["x1"] <= t0 + 0.5, f"{name}: start-up band {g}")
    for want in waits:
        tu.expect(any(want in g["label"] for g in gaps), f"{name}: no band says '{want}': {gaps}")
    return share


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

    def test_timeline_ranks_by_hand(self):
        traces = record_ddp_steps("timeline_hand")
        report = timeline_report(traces, "timeline_hand")
        check_training_width(report, "ranks by hand")
        # Note [Legend of the trace's owners]: the bridge makes its "c++ hooks"
        # owner at start, but this program registers no C++ hook: the legend
        # names the Reducer (the R1 chips) only.
        names = report["legend"]["names"]
        tu.expect(names and all(n.startswith("Reducer") for n in names), f"legend: {names}")

    def test_timeline_spawn(self):
        traces = record_ddp_steps("timeline_spawn", by_hand=False)
        check_training_width(timeline_report(traces, "timeline_spawn"), "mp.spawn")

    def test_timeline_failed_run(self):
        # Rank 1 killed at step 2: rank 0's allreduce fails at once (connection reset).
        traces = record_ddp_steps("timeline_failed", KILL_RANK1_AT=2, TIMEOUT_S=3)
        report = timeline_report(traces, "timeline_failed")
        check_training_width(report, "a rank killed")
        # Rank 1's "no data after here" is readable: not under a collapsed band.
        for x in report["timeline_lost_labels"]:
            tu.expect(not any(g["collapsed"] and g["x0"] - 1 <= x < g["x1"] for g in report["timeline_gaps"]),
                      f"lost label at {x} under a band: {report['timeline_gaps']}")
        # At the end rank 0 failed (its allreduce threw) and rank 1 was lost:
        # two banners (Note [Banner rows]), apart, each text whole, in the
        # header strip above the boxes, at both sizes.
        for size in ("1280x800", "1920x1080"):
            r = timeline_report(traces, f"banners_failed_{size}", size)
            banners = r["banners"]
            tu.expect(sorted(b["rank"] for b in banners) == [0, 1], f"{size}: banners {banners}")
            legend = r["timeline_legend"]
            tu.expect("failed" in legend and "lost" in legend and "rebuilt" not in legend, f"timeline legend {legend}")
            for i, b in enumerate(banners):
                x0, y0, x1, y1 = b["rect"]
                tu.expect(b["failed"] and not b["clipped"], f"{size}: banner {b}")
                tu.expect(y1 <= r["content"][1] + 0.5, f"{size}: banner {b} below the header strip {r['content']}")
                for o in banners[i + 1:]:
                    ox0, oy0, ox1, oy1 = o["rect"]
                    tu.expect(x1 <= ox0 or ox1 <= x0 or y1 <= oy0 or oy1 <= y0, f"{size}: banners overlap: {b} {o}")

    def test_timeline_hung_rank(self):
        # Rank 1 stopped at step 2: rank 0 waits gloo's 3 s timeout in its allreduce.
        traces = record_ddp_steps("timeline_hung", HANG_RANK1_AT=2, TIMEOUT_S=3)
        check_training_width(timeline_report(traces, "timeline_hung"), "a rank hung",
                             waits=("waiting in allreduce",))


if __name__ == "__main__":
    tu.main()
