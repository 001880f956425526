"""DDP's own handling recorded as hookscope's runtime writes it, 2 ranks over
gloo, one program with three DDPs: a Python comm hook (register_comm_hook:
one comm_hook fire per bucket call, with the bucket's index and bytes, owned
by the Reducer), static_graph=True with a parameter the forward never uses (DDP marks
it ready itself each backward: unused_parameter + mark_ready for it, Note
[Static graph's unused parameters] in python/hookscope/_ddp.py), and
no_sync() micro-batches (each Reducer hook fire there does nothing, as
intended: autograd_hook_noop of reason no_sync, sub 1, and `explain` says
so). Counts against what the program did; recording never changes what it
computes. 1.13 (label torch) and 2.6 (torch2)."""

import json
import os
import unittest

import torch_util as tu

STEPS = 6   # for each DDP; with no_sync, steps 1, 3, 5 run a micro-batch first
USED = 4    # parameters with a gradient: static graph's a.*, b.* (`unused` has 2 more); no_sync's 4


COMM_CALLS = []   # (bucket index, bytes) per call, in this rank


def comm_hook(state, bucket):
    """An allreduce of the bucket, averaged: what DDP does without a hook."""
    import torch.distributed as dist
    buf = bucket.buffer()
    COMM_CALLS.append((bucket.index(), buf.numel() * buf.element_size()))
    fut = dist.all_reduce(buf / dist.get_world_size(), async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def worker(rank, world, prefix, digest_out):
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 8)
            self.b = torch.nn.Linear(8, 4)
            self.unused = torch.nn.Linear(8, 4)   # never in the graph

        def forward(self, x):
            return self.b(torch.tanh(self.a(x)))

    torch.manual_seed(0)
    losses = []
    with tu.maybe_recording(prefix):
        tu.init_group(rank, world)
        # Reducer 1: static_graph (PyTorch 1.13 fails an internal assert on
        # no_sync with static_graph, so no_sync gets a DDP of its own).
        model = Net()
        ddp = DDP(model, static_graph=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.manual_seed(1 + rank)
        for step in range(STEPS):
            loss = ddp(torch.randn(4, 8)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss)
        # Reducer 2: no_sync micro-batches before every other step.
        model2 = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
        ddp2 = DDP(model2)
        opt2 = torch.optim.SGD(model2.parameters(), lr=0.1)
        for step in range(STEPS):
            if step % 2 == 1:
                with ddp2.no_sync():   # gradients kept local
                    ddp2(torch.randn(4, 8)).pow(2).mean().backward()
            loss = ddp2(torch.randn(4, 8)).pow(2).mean()
            loss.backward()
            opt2.step()
            opt2.zero_grad()
            losses.append(loss)
        # Reducer 3: a comm hook (an allreduce of its own) over 2+ buckets
        # (DDP's first bucket holds up to 1 MiB, whatever bucket_cap_mb says).
        model3 = torch.nn.Sequential(torch.nn.Linear(8, 512), torch.nn.Tanh(), torch.nn.Linear(512, 512),
                                     torch.nn.Tanh(), torch.nn.Linear(512, 4))
        ddp3 = DDP(model3, bucket_cap_mb=0.001)
        opt3 = torch.optim.SGD(model3.parameters(), lr=0.1)
        import warnings
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            ddp3.register_comm_hook(None, comm_hook)
        for step in range(STEPS):
            loss = ddp3(torch.randn(4, 8)).pow(2).mean()
            loss.backward()
            opt3.step()
            opt3.zero_grad()
            losses.append(loss)
        import torch.distributed as dist
        dist.barrier()
        del ddp, ddp2, ddp3
    import torch.distributed as dist
    dist.destroy_process_group()
    with open(f"{digest_out}.rank{rank}.json", "w") as f:
        json.dump({"digest": tu.digest(losses, [*model.named_parameters(), *model2.named_parameters(),
                                                 *model3.named_parameters()]),
                   "comm_hook_calls": COMM_CALLS,
                   "warnings": " ".join(str(w.message) for w in said)}, f)


def run(recorded):
    tag = "recorded" if recorded else "plain"
    prefix = os.path.join(tu.OUT, "static_graph")
    digest_out = os.path.join(tu.OUT, f"static_graph_{tag}")
    tu.run_ranks_once(worker, 2, (prefix if recorded else None, digest_out), timeout=240)
    with open(f"{digest_out}.rank0.json") as f:
        return f"{prefix}.rank0.hstrace", json.load(f)


class DdpHandling(unittest.TestCase):
    def test_comm_hook_one_fire_per_bucket_call(self):
        path, ran = run(True)
        calls = [tuple(c) for c in ran["comm_hook_calls"]]
        self.assertGreaterEqual(len({i for i, _ in calls}), 2, f"2+ buckets: {calls}")
        self.assertNotIn("hookscope", ran["warnings"], "recorded, so nothing to warn about")
        ev = tu.events(path)
        adds = [e for e in ev if e["kind"] == "hook_add" and e.get("hook_kind") == "comm_hook"]
        self.assertEqual(len(adds), 1, adds)
        self.assertEqual(adds[0].get("owner_label"), "Reducer 3")
        self.assertNotIn("node", adds[0], "a hook of the Reducer, on no Function")
        fires = [e for e in ev if e["kind"] == "hook_fire" and e.get("hook_kind") == "comm_hook"]
        self.assertEqual([(e["bucket"], e["bytes"]) for e in fires], calls)
        self.assertTrue(all(e["key"] == adds[0]["key"] for e in fires))
        # It dies with its Reducer (del ddp3), removed by it: no leak, no stale fire.
        gone = [e for e in ev if e["kind"] == "hook_remove" and e.get("hook_kind") == "comm_hook"]
        self.assertEqual([(e["key"], e.get("by_label")) for e in gone], [(adds[0]["key"], "Reducer 3")])
        code, out = tu.cli("explain", "--event", fires[0]["index"], path)
        self.assertIn("handed bucket", out)
        self.assertIn("normal fire", out)
        i, size = calls[0]
        self.assertTrue(fires[0]["describe"].endswith(f"of Reducer 3 for bucket {i} ({size} bytes)"),
                        fires[0]["describe"])

    def test_static_graph_unused_parameters_marked_ready_each_backward(self):
        path, _ = run(True)
        ev = [e for e in tu.events(path) if e.get("owner_label") == "Reducer 1"]
        prepares = [e for e in ev if e["kind"] == "prepare_for_backward"]
        self.assertEqual(len(prepares), STEPS, "one prepared backward a step")
        unused = [e for e in ev if e["kind"] == "unused_parameter"]
        self.assertEqual(len(unused), 2 * STEPS, unused[:4])
        self.assertEqual({e.get("text") for e in unused}, {"unused.weight", "unused.bias"}, unused[:2])
        nodes = {u["node"] for u in unused}
        ready_unused = [e for e in ev if e["kind"] == "mark_ready" and e["node"] in nodes]
        self.assertEqual(len(ready_unused), 2 * STEPS, "DDP marks them ready itself")
        # The used ones: each by its Reducer hook's fire, once a prepared backward.
        ready = [e for e in ev if e["kind"] == "mark_ready"]
        self.assertEqual(len(ready) - len(ready_unused), USED * STEPS)
        self.assertEqual([e for e in ev if e["kind"] == "autograd_hook_noop"], [])

    def test_no_sync_fires_are_no_ops_of_reason_no_sync(self):
        path, _ = run(True)
        ev = tu.events(path)
        noops = [e for e in ev if e["kind"] == "autograd_hook_noop"]
        micro = len(range(1, STEPS, 2))
        self.assertEqual(len(noops), USED * micro, "each parameter's hook, each micro-batch")
        self.assertTrue(all(e["sub"] == 1 and e.get("owner_label") == "Reducer 2" for e in noops),
                        "reason no_sync (sub 1)")
        fire = max(e["index"] for e in ev if e["kind"] == "hook_fire" and e["index"] < noops[0]["index"])
        code, out = tu.cli("explain", "--event", fire, path)
        self.assertIn("inside no_sync()", out)
        self.assertIn("normal fire", out)
        # No alarm: no_sync's no-ops are intended; static graph's unused
        # parameters are a warning (handled by DDP), never an error.
        code, out = tu.cli("check", path)
        self.assertIn("0 error(s), 2 warning(s)", out)
        self.assertIn("warning unused_parameter: 2 finding(s), 12 occurrence(s); Reducer 1 (2)", out)

    def test_recording_changes_nothing(self):
        _, recorded = run(True)
        _, plain = run(False)
        for what in ("digest", "comm_hook_calls"):
            self.assertEqual(plain[what], recorded[what], what)


if __name__ == "__main__":
    tu.main()
