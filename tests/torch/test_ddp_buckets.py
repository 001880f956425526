"""DDP's buckets and their allreduces from real PyTorch, as its profiler sees
them (Note [Collectives through RecordFunction]): 2 ranks (processes, gloo),
a model whose rebuilt buckets are several. After DDP rebuilt its buckets,
every backward holds one bucket_ready per bucket, in order, each followed by
its allreduce (collective_begin with the bucket's bytes, then its end), and
every mark_ready names the bucket DDP put its parameter in, as DDP's own
logging data says. DDP's initial broadcast and a user's allreduce from a
hook are collectives of no bucket. Recording changes nothing computed."""

import json
import os
import shutil
import subprocess
import unittest

import torch_util as tu

STEPS = 5
NO_BUCKET = 2**32 - 1


def worker(rank, world, prefix, record):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    losses = []
    with tu.maybe_recording(prefix if record else None):
        tu.init_group(rank, world)
        model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 8))
        ddp = DDP(model, bucket_cap_mb=0.5)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.randn(4, 64) + rank
        for step in range(STEPS):
            opt.zero_grad()
            loss = ddp(x).pow(2).mean()
            if step == STEPS - 1:
                # A user's collective inside the backward: not a bucket's.
                def user_allreduce(grad):
                    dist.all_reduce(grad.detach().clone())
                loss.register_hook(user_allreduce)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        logged = ddp._get_ddp_logging_data()
        dist.destroy_process_group()
    if record:
        with open(f"{prefix}.rank{rank}.buckets.json", "w") as f:
            json.dump({"sizes": logged["rebuilt_bucket_sizes"],
                       "members": logged["rebuilt_per_bucket_param_indices"]}, f)
    with open(f"{prefix}.rank{rank}.{'recorded' if record else 'plain'}.json", "w") as f:
        json.dump(tu.digest(losses, model.named_parameters()), f)


def ints(text):
    return [int(x) for x in text.replace(",", " ").split()]


def backwards(evs):
    """The events of each backward (backward_begin .. backward_end)."""
    out, cur = [], None
    for e in evs:
        if e["kind"] == "backward_begin":
            cur = []
        elif e["kind"] == "backward_end" and cur is not None:
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.append(e)
    return out


class DdpBuckets(unittest.TestCase):
    prefix = os.path.join(tu.OUT, "ddp_buckets")

    @classmethod
    def setUpClass(cls):
        tu.run_ranks_once(worker, args=(cls.prefix, True), timeout=240)
        tu.run_ranks_once(worker, args=(cls.prefix, False), timeout=240)

    def rank(self, r):
        with open(f"{self.prefix}.rank{r}.buckets.json") as f:
            logged = json.load(f)
        sizes = ints(logged["sizes"])
        members = [ints(b) for b in logged["members"].split(",")]
        return tu.events(f"{self.prefix}.rank{r}.hstrace"), sizes, members

    def test_buckets_after_rebuild(self):
        for r in range(2):
            evs, sizes, members = self.rank(r)
            self.assertGreater(len(sizes), 1, "the model is meant to have several buckets")
            passes = backwards(evs)
            self.assertEqual(len(passes), STEPS)
            # Members are logged by DDP one forward after its rebuild (after
            # the first backward): known from the third backward on.
            for n, p in enumerate(passes[2:], start=2):
                ready = [e for e in p if e["kind"] == "bucket_ready"]
                self.assertEqual([e.get("arg", 0) for e in ready], list(range(len(sizes))),
                                 f"rank {r} backward {n}: one bucket_ready per bucket, in order")
                self.assertEqual([e.get("actor", 0) for e in ready], [len(m) for m in members],
                                 f"rank {r} backward {n}: parameters per bucket")
                begins = {e["key"]: e for e in p if e["kind"] == "collective_begin"}
                ends = {e["key"] for e in evs if e["kind"] == "collective_end"}
                for b, e in enumerate(ready):
                    c = begins.get(e["key"])
                    self.assertIsNotNone(c, f"rank {r}: bucket {b}'s allreduce began")
                    self.assertEqual((c["sub"], c.get("arg", 0), c.get("actor", 0)), (0, sizes[b], b),
                                     f"rank {r}: bucket {b}'s allreduce: op, bytes, bucket")
                    self.assertIn(e["key"], ends, f"rank {r}: bucket {b}'s allreduce ended")
                bucket_of = {i: b for b, m in enumerate(members) for i in m}
                marks = [e for e in p if e["kind"] == "mark_ready"]
                self.assertEqual(len(marks), len(bucket_of))
                for e in marks:
                    self.assertEqual(e.get("actor", 0), bucket_of[e.get("arg", 0)],
                                     f"rank {r}: parameter {e.get('arg', 0)}'s bucket")

    def test_each_backward_finalized(self):
        # Note [A bridge trace's finalized backward]: PyTorch's Reducer
        # finalizes every backward here (all parameters used); the bridge
        # writes it once, with the DDP's backward count, before backward_end.
        for r in range(2):
            evs, _, _ = self.rank(r)
            owner = next(e["owner"] for e in evs if e["kind"] == "reducer_constructed")
            for n, p in enumerate(backwards(evs), start=1):
                done = [e for e in p if e["kind"] == "buckets_finalized"]
                self.assertEqual([(e.get("owner"), e.get("arg", 0)) for e in done], [(owner, n)],
                                 f"rank {r} backward {n}: one buckets_finalized of Reducer {owner}")
                after = [e["kind"] for e in p[p.index(done[0]) + 1:]]
                self.assertTrue(set(after) <= {"collective_end"},
                                f"rank {r} backward {n}: finalized last, then only Gloo's late ends: {after}")

    def test_collectives_of_no_bucket(self):
        evs, sizes, _ = self.rank(0)
        begins = [e for e in evs if e["kind"] == "collective_begin"]
        broadcasts = [e for e in begins if e["sub"] == 1]
        self.assertTrue(broadcasts, "DDP's initial broadcast of the parameters is recorded")
        self.assertTrue(all(e.get("actor") == NO_BUCKET and "owner" not in e for e in broadcasts))
        last = backwards(evs)[-1]
        user = [e for e in last if e["kind"] == "collective_begin" and e.get("actor") == NO_BUCKET]
        self.assertEqual([e["arg"] for e in user], [4], "the hook's allreduce of one float")

    def test_trace_reads_clean(self):
        for r in range(2):
            code, out = tu.cli("check", f"{self.prefix}.rank{r}.hstrace")
            self.assertNotIn("collective", out, f"rank {r}: check finds nothing wrong with them:\n{out}")
        _, info = tu.cli("info", f"{self.prefix}.rank0.hstrace", check=0)
        self.assertIn("not exposed by PyTorch", info, "the header says what PyTorch hides")

    def test_reducers_panel_says_the_rebuilt_buckets(self):
        # Note [Rebuilt buckets]: the GUI's Reducers panel counts the buckets
        # DDP rebuilt after the first backward, not the one logged at
        # construction, and says when (its words in the draw report).
        gui = os.environ.get("HOOKSCOPE_GUI", "")
        if not gui or not os.path.exists(gui) or shutil.which("xvfb-run") is None:
            self.skipTest("the GUI is not built or xvfb-run is missing")
        evs, sizes, members = self.rank(0)
        built = next(e for e in evs if e["kind"] == "reducer_constructed")
        rebuilt = next(e["index"] for e in evs if e["kind"] == "prepare_for_backward" and e.get("arg") == 2)
        last = max(e["index"] for e in evs if e["kind"] == "buckets_finalized")
        report, png = os.path.join(tu.OUT, "ddp_buckets_reducers.json"), os.path.join(tu.OUT, "ddp_buckets_reducers.png")
        r = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", gui, "--size", "1280x800",
                            f"{self.prefix}.rank0.hstrace", "--at", str(last), "--panel", "reducers", "--screenshot", png],
                           env=dict(os.environ, HOOKSCOPE_DRAW_REPORT=report), capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(report) as f:
            words = json.load(f)["reducers"]
        n = built.get("actor", 0)
        self.assertNotEqual(n, len(sizes), "DDP logged other buckets at construction than after its rebuild")
        per_bucket = ", ".join(str(len(m)) for m in members)
        self.assertIn(f"Reducer 1 r0 buckets: 8 parameters in {len(sizes)} buckets ({per_bucket})", words)
        self.assertIn(f"Reducer 1 r0 buckets rebuilt at backward 2 (#{rebuilt}); {n} bucket{'' if n == 1 else 's'} "
                      "at construction", words)

    def test_recording_changes_nothing(self):
        for r in range(2):
            with open(f"{self.prefix}.rank{r}.plain.json") as f:
                plain = json.load(f)
            with open(f"{self.prefix}.rank{r}.recorded.json") as f:
                recorded = json.load(f)
            tu.expect_same_result(plain, recorded, f"rank {r}")


if __name__ == "__main__":
    tu.main()
