"""The GUI on traces recorded through the bridge (under Xvfb), measured
through the draw report (Note [Draw report]). On the kept-alive DDP program
(test_lingering.py: PyTorch #21344, old DDPs kept alive and rebuilt on the
same module, no_sync micro-batches), at 1280x800 dark and 1920x1080 light:
every Diagnostics row's message is the finding's whole text, wrapped inside
the panel; hook_growth tells each old Reducer's story as the run had it
(replaced at #N, alive until destroyed at #M); the owners' legend says "gen"
only where a rank holds copies of its parameters: not on the kept-alive run
(one module, its parameters shared by three DDPs), but on a program that
builds its model again in a new process group while keeping the old DDP.
Module hooks (Note [Module hook anchors]): a full backward hook's chip is
on the module's BackwardHookFunction Node, inside the canvas; a forward
hook's on the module's output Node (an expected failure: see the test).
Skipped (exit 77) when the GUI is not built or xvfb-run is
missing."""

import json
import os
import shutil
import subprocess
import unittest

import torch_util as tu
import test_lingering

GUI = os.environ.get("HOOKSCOPE_GUI", "")
SIZES = (("1280x800", False), ("1920x1080", True))
MODULE_FORWARD, MODULE_BACKWARD = 1 << 6, 1 << 8  # bits of trace::HookKind kModuleForward, kModuleBackward


def setUpModule():
    if not GUI or not os.path.exists(GUI) or shutil.which("xvfb-run") is None:
        raise unittest.SkipTest("the GUI is not built or xvfb-run is missing")


def report(traces, name, size, light, *args):
    """The draw report of `traces` opened at `size` (with `args`)."""
    png, rep = os.path.join(tu.OUT, f"{name}.png"), os.path.join(tu.OUT, f"{name}.json")
    if os.path.exists(rep):
        os.remove(rep)
    r = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", GUI, "--size", size,
                        *(["--light"] if light else []), *traces, *args, "--screenshot", png],
                       env=dict(os.environ, HOOKSCOPE_DRAW_REPORT=rep), capture_output=True, text=True, timeout=120)
    tu.expect(r.returncode == 0, r.stdout + r.stderr)
    with open(rep) as f:
        return json.load(f)


_recorded = {}


def rebuilt_worker(rank, world, prefix, port):
    """DDP on a model, then, in a new process group (generation 1), a new
    model with the same parameter names in a new DDP; the old one kept."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    x = torch.randn(4, 8)

    def model():
        return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

    with tu.maybe_recording(prefix):
        tu.init_group(rank, world)
        old = DDP(model())
        for _ in range(2):
            old(x).sum().backward()
        dist.destroy_process_group()
        os.environ["MASTER_PORT"] = str(port)
        tu.init_group(rank, world)
        new = DDP(model())
        for _ in range(2):
            new(x).sum().backward()
        dist.barrier()
    dist.destroy_process_group()
    del old, new


def rebuilt_traces():
    prefix = os.path.join(tu.OUT, "gui_rebuilt")
    tu.run_ranks_once(rebuilt_worker, 2, (prefix, tu.free_port()), timeout=120)
    return [f"{prefix}.rank{r}.hstrace" for r in range(2)]


def check_rows_whole(d, findings, where):
    """Each row is one finding's whole message, inside the panel across, some on screen."""
    area, rows = d["area"], d["rows"]
    tu.expect(len(rows) == len(findings), f"{where}: {len(rows)} rows for {len(findings)} findings")
    messages = {(f["kind"], f["message"]) for f in findings}
    for row in rows:
        x0, y0, x1, y1 = row["rect"]
        tu.expect(row["wrapped"], f"{where}: a row drawn on one line: {row}")
        tu.expect(area[0] - 0.5 <= x0 and x1 <= area[2] + 0.5, f"{where}: a row past the panel {area}: {row}")
        tu.expect((row["kind"], row["text"]) in messages, f"{where}: not a finding's whole message: {row}")
    tu.expect(any(r["rect"][1] < area[3] and r["rect"][3] > area[1] for r in rows), f"{where}: no row on screen")


class GuiBridgeTest(unittest.TestCase):
    def test_kept_alive_rows_whole_and_hook_growth_true(self):
        path = test_lingering.traces()[0]
        ev = tu.events(path)
        owners = test_lingering.reducers(ev)
        first_prepare = {}
        for e in ev:
            if e["kind"] == "prepare_for_backward":
                first_prepare.setdefault(e["owner_label"], e["index"])
        destroyed = {e["owner_label"]: e["index"] for e in ev if e["kind"] == "reducer_destroyed"}
        tu.expect(sorted(owners) == ["Reducer 1", "Reducer 2", "Reducer 3"], str(owners))
        # Reducer N is replaced when Reducer N+1 first prepares, and lives until the program's exit.
        stories = [f"Reducer {n} was replaced by Reducer {n + 1} at #{first_prepare[f'Reducer {n + 1}']} and stayed "
                   f"alive until it was destroyed at #{destroyed[f'Reducer {n}']}" for n in (1, 2)]
        code, findings = tu.check_json(path)
        tu.expect(code == 1 and findings, f"findings expected: {findings}")
        for size, light in SIZES:
            d = report([path], f"diag_kept_alive_{size}", size, light)["diagnostics"]
            check_rows_whole(d, findings, size)
            growth = [r["text"] for r in d["rows"] if r["kind"] == "hook_growth"]
            tu.expect(growth, f"{size}: no hook_growth row: {d['rows']}")
            for text in growth:
                tu.expect("destroyed owners stay attached" not in text and "still alive" not in text, text)
                for s in stories:
                    tu.expect(s in text, f"{size}: '{s}' not in {text}")
            line_h = d["line_h"]
            tu.expect(any(r["rect"][3] - r["rect"][1] >= 1.5 * line_h for r in d["rows"]),
                      f"{size}: hook_growth's story is longer than a line: wrapped")

    def test_gen_only_where_a_rank_holds_copies(self):
        # Three DDPs on one module share its parameters: one AccumulateGrad
        # each, no copies, no "gen" (Note [Module generations]).
        kept = test_lingering.traces()[0]
        ev = tu.events(kept)
        third = min(e["index"] for e in ev if e["kind"] == "prepare_for_backward" and e["owner_label"] == "Reducer 3")
        rebuilt = rebuilt_traces()
        rev = tu.events(rebuilt[0])
        second_group = [e["index"] for e in rev if e["kind"] == "process_group_created"][1]
        # Whether a rank holds copies does not depend on the window's size:
        # the cases without are shot once, the one with at both sizes (<= 15 s).
        size, light = SIZES[0]
        r = report([kept], f"gen_kept_alive_{size}", size, light, "--at", str(third + 40))
        tu.expect(len(r["legend"]["names"]) == 3, f"{size}: three Reducers in the legend: {r['legend']}")
        tu.expect(r["legend"]["gens"] == 0 and r["gen_labels"] == 0,
                  f"{size}: kept-alive holds no copies: {r['legend']} gen_labels {r['gen_labels']}")
        # A model built again in a new process group: its parameters are
        # copies of the old ones, still held by the old DDP: "gen" says which.
        before = report([rebuilt[0]], f"gen_rebuilt_before_{size}", size, light, "--at", str(second_group - 1))
        tu.expect(before["legend"]["gens"] == 0 and before["gen_labels"] == 0,
                  f"{size}: before the copies: {before['legend']} gen_labels {before['gen_labels']}")
        for size, light in SIZES:
            after = report([rebuilt[0]], f"gen_rebuilt_{size}", size, light)
            tu.expect(after["legend"]["gens"] >= 1 and after["gen_labels"] >= 1,
                      f"{size}: copies in two generations: {after['legend']} gen_labels {after['gen_labels']}")
            tu.expect(after["legend"]["right"] <= after["legend"]["panel_right"], f"{size}: {after['legend']}")

    def module_chips(self):
        """(size, [(box name, chip kind bits, rect)], report) at the second
        backward's start of a program with a forward hook on Linear 0 and a
        full backward hook on Linear 2, both attached throughout."""
        import torch
        out = os.path.join(tu.OUT, "gui_module_chips.hstrace")
        if not _recorded.get(out):  # once per process: both tests read it
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
            with tu.maybe_recording(out):
                model[0].register_forward_hook(lambda m, i, o: None)
                model[2].register_full_backward_hook(lambda m, gi, go: None)
                for _ in range(2):
                    model(torch.randn(3, 4, requires_grad=True)).sum().backward()
            _recorded[out] = True
        ev = tu.events(out)
        kinds = {e.get("hook_kind") for e in ev if e["kind"] == "hook_add"}
        tu.expect({"module_forward", "module_backward"} <= kinds, f"hook kinds added: {kinds}")
        # Both hooks have fired once (their anchors), the second graph is live.
        at = [e["index"] for e in ev if e["kind"] == "backward_begin"][1]
        for size, light in SIZES:
            r = report([out], f"module_chips_{size}", size, light, "--at", str(at))
            yield size, list(zip(r["box_names"], r["box_chip_kinds"], r["boxes"])), r

    def test_module_backward_hook_chip_on_its_backward_hook_function_node(self):
        for size, boxes, r in self.module_chips():
            where = f"{size}: {[(n, k) for n, k, _ in boxes]}"
            bwd = [(n, rect) for n, k, rect in boxes if k & MODULE_BACKWARD]
            tu.expect(bwd and all(n == "BackwardHookFunctionBackward" for n, _ in bwd),
                      f"the full backward hook's chip on Linear 2's BackwardHookFunction Node: {where}")
            tu.expect(r["hidden_chips"] == 0, f"{size}: chips hidden behind +N: {r['hidden_chips']}")
            c = r["content"]
            for n, (x0, y0, x1, y1) in bwd:
                tu.expect(c[0] <= x0 and x1 <= c[2] and c[1] <= y0 and y1 <= c[3], f"{size}: {n} off canvas {c}")

    # A defect, kept in view: Note [Module hook anchors] puts a forward hook's
    # chip on the last Function created before its fire, but the bridge emits
    # a graph's node_created events when backward walks it, after the fires
    # of the forward that built it: no Node precedes the fire, no chip.
    @unittest.expectedFailure
    def test_module_forward_hook_chip_on_its_output_node(self):
        for size, boxes, _ in self.module_chips():
            fwd = [n for n, k, _ in boxes if k & MODULE_FORWARD]
            tu.expect(fwd == ["AddmmBackward0"],
                      f"{size}: the forward hook's chip on Linear 0's output Node: {[(n, k) for n, k, _ in boxes]}")

if __name__ == "__main__":
    tu.main()
