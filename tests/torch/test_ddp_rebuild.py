"""PyTorch issue #21344 for real: DDP rebuilt on the same module after a
failure, 3 times, on 2 ranks (processes, gloo). With the old DDP objects
deleted each Reducer removes its hooks (check is clean); with them kept alive
by a forgotten reference, every AccumulateGrad carries one hook per Reducer:
`check` reports hook_growth 1 -> 2 -> 3 -> 4 on each, naming the parameter
and the Reducers (each old one replaced while alive: it never prepares a
backward again, Note [Hook growth]), and the trace's hook count per
AccumulateGrad equals the length of the Node's post-hook list read through
the extension. The Reducers being alive, multi_owner is reported as well."""

import gc
import json
import os
import unittest

import torch_util as tu

REBUILDS = 3


class Failure(RuntimeError):
    pass


def worker(rank, world, mode, prefix, record=True):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import hookscope

    torch.manual_seed(0)
    losses = []
    with tu.maybe_recording(prefix if record else None):
        tu.init_group(rank, world)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
        forgotten = []
        ddp = DDP(model)
        x = torch.randn(4, 8)
        for generation in range(REBUILDS + 1):
            for step in range(2):
                loss = ddp(x).pow(2).mean()
                losses.append(loss.item())
                if step == 1 and generation < REBUILDS:
                    # The failure: raised at the start of backward on every
                    # rank (before any bucket is reduced), as a real job's
                    # failure handler would see it.
                    def fail(grad):
                        raise Failure(f"simulated failure in generation {generation}")
                    loss.register_hook(fail)
                try:
                    loss.backward()
                except Failure:
                    del loss
                    if mode == "kept":
                        forgotten.append(ddp)   # the reference the user forgot
                    del ddp
                    gc.collect()
                    ddp = DDP(model)            # rebuilt on the same module
                    break
        counts = {name: hookscope.post_hook_count(p) for name, p in model.named_parameters()}
        keys = {name: hookscope.cpp_post_hook_keys(p) for name, p in model.named_parameters()}
        dist.barrier()
    with open(f"{prefix}.rank{rank}.json", "w") as f:
        json.dump({"counts": counts, "keys": keys,
                   "result": tu.digest(losses, model.named_parameters())}, f)
    del forgotten, ddp
    dist.destroy_process_group()


def hooks_at_end(path):
    """{AccumulateGrad label: number of post hooks} from the trace's state at its last event."""
    n = len(tu.events(path))
    code, out = tu.cli("state", path, "--at", n - 1, "--format", "json")
    tu.expect(code == 0, f"state failed: {out}")
    result = {}
    for f in json.loads(out):
        if f["function"].startswith("AccumulateGrad ("):
            label = f["function"][len("AccumulateGrad ("):-1]
            result[label] = sum(1 for h in f["hooks"] if h["kind"] == "post")
    return result


def run(mode, record=True):
    prefix = os.path.join(tu.OUT, f"ddp_rebuild_{mode}" + ("" if record else "_plain"))
    tu.run_ranks_once(worker, 2, (mode, prefix, record), timeout=100)
    return prefix


def result(prefix, rank):
    with open(f"{prefix}.rank{rank}.json") as f:
        return json.load(f)["result"]


class DdpRebuildTest(unittest.TestCase):
    def test_deleted_ddp_is_clean(self):
        prefix = run("deleted")
        for r in range(2):
            path = f"{prefix}.rank{r}.hstrace"
            code, report = tu.check_json(path)
            tu.expect(code == 0, f"check should be clean on {path}: {report}")
            ev = tu.events(path)
            kinds = [e["kind"] for e in ev]
            tu.expect(kinds.count("reducer_constructed") == REBUILDS + 1, "one Reducer per DDP")
            # The last DDP outlives the recording.
            tu.expect(kinds.count("reducer_destroyed") == REBUILDS, "every old Reducer destroyed")
            tu.expect(kinds.count("failure") == REBUILDS, "the failures are recorded")
            tu.expect("autograd_hook_noop" not in kinds, "no lingering Reducer's hook fires")
            tu.expect(kinds.count("mark_ready") > 0, "the live Reducer marks its parameters ready")
            with open(f"{prefix}.rank{r}.json") as f:
                counts = json.load(f)["counts"]
            # Only the live (last) Reducer's hook is left on each AccumulateGrad.
            tu.expect(all(c == 1 for c in counts.values()), f"one hook per AccumulateGrad: {counts}")

    def test_kept_ddp_shows_every_reducer(self):
        prefix = run("kept")
        for r in range(2):
            path = f"{prefix}.rank{r}.hstrace"
            code, report = tu.check_json(path)
            tu.expect(code == 1, f"check should report findings on {path}")
            # The forgotten DDP objects keep their Reducers alive, so their hooks
            # stay and fire on every backward: hook_growth on each AccumulateGrad,
            # naming the parameter and every Reducer, the old ones as replaced.
            growth = [f for f in report if f["kind"] == "hook_growth"]
            tu.expect(len(growth) == 4, f"one hook_growth per AccumulateGrad: {growth}")
            series = " → ".join(str(i) for i in range(1, REBUILDS + 2))
            for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
                mine = [f for f in growth if f"({name} [" in f["message"]]
                tu.expect(len(mine) == 1, f"no hook_growth names {name}: {growth}")
                f = mine[0]
                tu.expect(f["count"] == REBUILDS + 1 and f["severity"] == "error", f"{name}: {f}")
                text = f["message"]
                tu.expect(series in text, f"{name}: the series {series}: {text}")
                tu.expect(all(f"Reducer {i} replaced" in text for i in range(1, REBUILDS + 1))
                          and f"Reducer {REBUILDS + 1})" in text,
                          f"the finding should name every Reducer: {text}")
            # The live Reducers at once: multi_owner, as before.
            multi = [f for f in report if f["kind"] == "multi_owner" and f["count"] == REBUILDS + 1]
            tu.expect(len(multi) == 4, f"multi_owner with every Reducer on each parameter: {multi}")
            noops = [e for e in tu.events(path) if e["kind"] == "autograd_hook_noop"]
            tu.expect({e["owner_label"] for e in noops} == {f"Reducer {i}" for i in range(1, REBUILDS + 1)},
                      "the forgotten Reducers' hooks keep firing and do nothing")
            with open(f"{prefix}.rank{r}.json") as f:
                got = json.load(f)
            in_trace = hooks_at_end(path)
            for name, count in got["counts"].items():
                tu.expect(count == REBUILDS + 1, f"{name}: {count} post hooks, wanted {REBUILDS + 1}")
                label = next((l for l in in_trace if l.startswith(name + " ")), None)
                tu.expect(label is not None, f"{name} not in the trace state: {in_trace}")
                tu.expect(in_trace[label] == count,
                          f"{name}: trace shows {in_trace[label]} post hooks, Node has {count}")
                tu.expect(len(got["keys"][name]) == count, f"{name}: keys {got['keys'][name]}")

    def test_recording_changes_nothing(self):
        # The kept-DDP program (every hook of every Reducer fires) recorded and
        # not: the same losses and parameters on each rank, bit for bit.
        recorded, plain = run("kept"), run("kept", record=False)
        for r in range(2):
            tu.expect_same_result(result(plain, r), result(recorded, r), f"ddp rebuild, rank {r}")


if __name__ == "__main__":
    tu.main()
