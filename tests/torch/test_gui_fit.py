"""Fit that fits on a transformer-sized trace recorded through the bridge
(Note [Fit shows every rank]): programs/transformer_steps.py on 2 ranks,
opened in the GUI under Xvfb at a forward event, mid-backward and after
the step, at 1280x800 and 1920x1080. Its backward is far taller than the
graph panel at readable text, so fit shows both ranks' columns side by
side inside the canvas horizontally (at 1920x1080; at 1280x800 they are
~800 px against ~790), text at 10 px or more, the current event's box in
view, no box under the minimap, and the toolbar says how many boxes are
above and below (the draw report, Note [Draw report]).
Skipped (exit 77) when the GUI is not built or xvfb-run is missing."""

import json
import os
import unittest

import torch_util as tu
import test_gui

PROGRAM = os.path.join(test_gui.HERE, "programs", "transformer_steps.py")


def story_events(traces):
    """Merged indices of: the last event before rank 0's first backward (the
    forward graph whole), the middle of that backward, and the end of the
    first step's backward on both ranks (the graph not yet released)."""
    out = os.path.join(tu.OUT, "fit_transformer.jsonl")
    tu.cli("export", *traces, "--format", "jsonl", "-o", out, check=0)
    with open(out) as f:
        ev = [json.loads(line) for line in f if line.strip()]
    begin = next(e["index"] for e in ev if e["kind"] == "backward_begin" and e["rank"] == 0)
    end = next(e["index"] for e in ev if e["kind"] == "backward_end" and e["rank"] == 0)
    step = max(next(e["index"] for e in ev if e["kind"] == "backward_end" and e["rank"] == r) for r in (0, 1))
    return {"forward": begin - 1, "mid-backward": (begin + end) // 2, "after the step": step}


def check_fit(r, where, columns_inside):
    c = r["content"]
    tu.expect(r["compact"] and r["live_units"] > 100, f"{where}: a compact view of the whole graph: {r['live_units']}")
    tu.expect(r["texts"] > 0 and r["small_texts"] == 0 and r["min_text_px"] >= 10.0,
              f"{where}: text {r['min_text_px']} px, {r['small_texts']} below 10 px")
    cols = sorted(r["rank_columns"], key=lambda col: col["rank"])
    tu.expect([col["rank"] for col in cols] == [0, 1], f"{where}: both ranks' columns: {cols}")
    for col in cols if columns_inside else ():
        x0, _, x1, _ = col["rect"]
        tu.expect(x0 >= c[0] - 0.5 and x1 <= c[2] + 0.5, f"{where}: rank {col['rank']}'s column {col['rect']} "
                  f"is not inside the canvas {c} horizontally")
    tu.expect(cols[0]["rect"][2] <= cols[1]["rect"][0], f"{where}: columns side by side: {cols}")
    for b in r["boxes"] if columns_inside else ():  # none under the minimap's column
        tu.expect(b[0] >= c[0] - 0.5 and b[2] <= c[2] + 0.5, f"{where}: box {b} outside the canvas {c}")
    tu.expect(r["focus_on_canvas"], f"{where}: the current event's box is not in view")
    # Taller than the canvas: the note says how many are above and below, per rank.
    note = r["off_canvas"]
    tu.expect(len(r["boxes"]) < r["live_units"] and note.startswith("off canvas: ") and
              ("above" in note or "below" in note), f"{where}: off-canvas note '{note}'")
    tu.expect(not columns_inside or "beside" not in note, f"{where}: off-canvas note '{note}'")


def setUpModule():
    test_gui.setUpModule()


class GuiFitTest(unittest.TestCase):
    def test_transformer_fit(self):
        traces = test_gui.record_ddp_steps("fit_transformer", program=PROGRAM)
        for what, at in story_events(traces).items():
            # At 1280x800 two ranks of 10 px parameter names ("0.layers.1.self_attn.out_proj.bias")
            # are wider than the graph panel (~800 px of ~790): what is beside is named too.
            for size, columns_inside in (("1280x800", False), ("1920x1080", True)):
                where = f"{what} (#{at}) at {size}"
                r = test_gui.timeline_report(traces, f"fit_transformer_{at}_{size}", size, ("--at", str(at)))
                check_fit(r, where, columns_inside)


if __name__ == "__main__":
    tu.main()
