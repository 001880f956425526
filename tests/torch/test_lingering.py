"""Lingering owners through the bridge (Note [Lingering owners]): PyTorch
#21344 as users hit it, with no failure at all: DDP rebuilt twice on the same
module while the program keeps the old DDP objects in a list, 2 ranks, odd
steps accumulating under no_sync(). The bridge writes what the runtime writes:
reducer_destroyed carries the hooks its destructor removed, a fire inside
no_sync is a no-op of reason no_sync (sub 1). check / lanes / explain name the
old Reducers "replaced by Reducer N at #E" and alive, a no_sync fire is
normal; the GUI (when built, under Xvfb) draws them as lingering."""

import json
import os
import shutil
import subprocess
import unittest

import torch_util as tu

STEPS = 9
GUI = os.environ.get("HOOKSCOPE_GUI", "")


def worker(rank, world, prefix):
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    with tu.maybe_recording(prefix):
        tu.init_group(rank, world)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        kept = []
        ddp = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(4, 8)
        for step in range(STEPS):
            if step in (STEPS // 3, 2 * STEPS // 3):
                kept.append(ddp)  # the reference the program keeps
                ddp = DDP(model)
            if step % 2 == 1:
                with ddp.no_sync():  # a micro-batch: gradients accumulate locally
                    ddp(x).pow(2).mean().backward()
                continue
            ddp(x).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
        import torch.distributed as dist
        dist.barrier()
        del kept, ddp
        import gc
        gc.collect()
    import torch.distributed as dist
    dist.destroy_process_group()


def traces():
    prefix = os.path.join(tu.OUT, "lingering")
    tu.run_ranks_once(worker, 2, (prefix,), timeout=120)
    return [f"{prefix}.rank{r}.hstrace" for r in range(2)]


def reducers(ev):
    """{owner label: owner id} of the Reducers."""
    return {e["owner_label"]: e["owner"] for e in ev if e["kind"] == "reducer_constructed"}


class LingeringTest(unittest.TestCase):
    def test_bridge_writes_the_runtime_fields(self):
        for path in traces():
            ev = tu.events(path)
            destroyed = [e for e in ev if e["kind"] == "reducer_destroyed"]
            tu.expect(len(destroyed) == 3, f"three Reducers destroyed at exit: {destroyed}")
            for e in destroyed:
                # 4 parameters: its destructor removed its 4 hooks (the runtime's field, actor)
                tu.expect(e.get("actor") == 4, f"hooks removed on destruction: {e}")
            noops = [e for e in ev if e["kind"] == "autograd_hook_noop"]
            no_sync = [e for e in noops if e["sub"] == 1]
            tu.expect(no_sync, "fires inside no_sync are no-ops of reason no_sync (sub 1)")
            tu.expect({e["owner_label"] for e in no_sync} <= {"Reducer 1", "Reducer 2", "Reducer 3"}, str(no_sync[:3]))

    def test_cli_names_the_lingering_reducers(self):
        path = traces()[0]
        code, out = tu.cli("check", "--all", path)
        tu.expect(code == 1, f"findings: {out}")
        tu.expect("Reducer 1 was replaced by Reducer 2 at #" in out, out)
        tu.expect("stayed alive until it was destroyed at #" in out, out)
        tu.expect("hooks of destroyed owners stay attached" not in out, out)
        code, out = tu.cli("lanes", path)
        tu.expect(code == 0 and "OUTLIVES ITS USE (Reducer 1 was replaced by Reducer 2 at #" in out, out)
        tu.expect(", 0 outlive their owner, " in out, out)
        ev = tu.events(path)
        r1 = reducers(ev)["Reducer 1"]
        # A fire of Reducer 1's hook followed by its no-op, after Reducer 2 prepared.
        prepares = [e["index"] for e in ev if e["kind"] == "prepare_for_backward" and e["owner_label"] == "Reducer 2"]
        fires = [e for e in ev if e["kind"] == "hook_fire" and e.get("owner") == r1 and e["index"] > prepares[0]]
        tu.expect(fires, "Reducer 1's hooks keep firing after it was replaced")
        code, out = tu.cli("explain", "--format", "jsonl", "--event", fires[0]["index"], path)
        j = json.loads(out)
        tu.expect(j["verdict"] == "lingering", out)
        tu.expect(j["summary"].startswith("lingering: Reducer 1 was replaced by Reducer 2 at #"), out)
        no_sync = [e for e in ev if e["kind"] == "autograd_hook_noop" and e["sub"] == 1]
        fire = max(e["index"] for e in ev if e["kind"] == "hook_fire" and e["index"] < no_sync[0]["index"])
        code, out = tu.cli("explain", "--event", fire, path)
        tu.expect("normal fire" in out and "inside no_sync()" in out, out)

    def test_gui_draws_them_lingering(self):
        if not GUI or not shutil.which("xvfb-run"):
            self.skipTest("the GUI is not built or xvfb-run is missing")
        paths = traces()
        ev = tu.events(paths[0])
        r2 = [e["index"] for e in ev if e["kind"] == "prepare_for_backward" and e["owner_label"] == "Reducer 3"]
        r1 = reducers(ev)["Reducer 1"]
        fire = min(e["index"] for e in ev if e["kind"] == "hook_fire" and e.get("owner") == r1 and e["index"] > r2[0])
        no_sync = [e for e in ev if e["kind"] == "autograd_hook_noop" and e["sub"] == 1]
        ns_fire = max(e["index"] for e in ev if e["kind"] == "hook_fire" and e["index"] < no_sync[0]["index"])

        def gui(name, size, light, *args, env="HOOKSCOPE_DRAW_REPORT"):
            report, png = os.path.join(tu.OUT, f"{name}.json"), os.path.join(tu.OUT, f"{name}.png")
            if os.path.exists(report):
                os.remove(report)
            # One rank's file: its events are the file's own (indices as the CLI gave them).
            r = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", GUI, "--size", size,
                                *(["--light"] if light else []), paths[0], *args, "--screenshot", png],
                               env=dict(os.environ, **{env: report}), capture_output=True, text=True, timeout=120)
            tu.expect(r.returncode == 0, r.stdout + r.stderr)
            with open(report) as f:
                return json.load(f)

        # What the runtime's kept-alive run is held to, on a bridge trace: both sizes, both themes.
        for size, light in (("1280x800", False), ("1920x1080", True)):
            tag = f"{size}{'_light' if light else ''}"
            d = gui(f"lingering_{tag}", size, light, "--at", str(r2[0] + 40))
            where = f"{tag}: {d['lingering']}"
            tu.expect(d["lingering"]["boxes"] > 0 and d["lingering"]["tags"] > 0, where)
            tu.expect(d["lingering"]["legend"] > 0, where)
            tu.expect("Reducer 1 r0: replaced, still alive (lingering)" in d["reducers"], f"{tag}: {d['reducers']}")
            tu.expect("Reducer 2 r0: replaced, still alive (lingering)" in d["reducers"], f"{tag}: {d['reducers']}")
            tu.expect(d["reducer_summary_overflow"] <= 0.5, f"{tag}: the Reducers summary runs past the panel")
            tu.expect("lingering" in d["timeline_legend"], f"{tag}: timeline legend {d['timeline_legend']}")
            tags = d["tag_rects"]
            for i, a in enumerate(tags):
                for b in tags[i + 1:]:
                    tu.expect(a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], f"{tag}: tags overlap {a} {b}")
            tu.expect(d["min_text_px"] >= 10 and d["small_texts"] == 0, f"{tag}: text below 10 px: {d['min_text_px']}")
            lanes = gui(f"lingering_lanes_{tag}", size, light, "--panel", "lanes", env="HOOKSCOPE_VIEWS_REPORT")
            tu.expect("outlive their use (owner replaced, still alive)" in lanes["lanes_summary"], lanes["lanes_summary"])
            tu.expect(lanes["lingering_segments"] > 0 and lanes["dead_segments"] == 0, str(lanes))
            why = gui(f"lingering_explain_{tag}", size, light, "--panel", "explain", "--at", str(fire),
                      env="HOOKSCOPE_VIEWS_REPORT")
            tu.expect(why["explain_verdict"] == "lingering", str(why))
            ns = gui(f"no_sync_explain_{tag}", size, light, "--panel", "explain", "--at", str(ns_fire),
                     env="HOOKSCOPE_VIEWS_REPORT")
            tu.expect(ns["explain_verdict"] == "normal", str(ns))


if __name__ == "__main__":
    tu.main()
