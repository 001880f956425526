"""Runtime vs bridge parity: the bridge and the runtime write the same
fields for the same event. The same DDP programs recorded by hookscope's own
runtime and by the torch bridge on real PyTorch, each event kind's fields
compared, 2 ranks over Gloo.

* kept-alive (PyTorch #21344 as users hit it): an MLP under DDP rebuilt twice
  on the same module while the program keeps the old DDPs, odd steps under
  no_sync; the runtime's scenario (`hookscope-cli record kept-alive`) and
  the same loop in PyTorch (worker below).
* a comm hook that averages each bucket and allreduces it: the runtime's
  program (tests/torch/ddp_comm_hook_runtime.cpp) and the same in PyTorch.

For each event kind (hook events per hook kind), the fields either side ever
writes (a slot not zero) must be the same, except those docs/trace-format.md
lists under "What one writer writes and the other does not", with the
reason; a field or kind one side writes that the list does not name fails
with its name. The values both sides must agree on are checked too:
hooks removed at a Reducer's destruction, who removed each Reducer hook, a
hook's Function (node 0 exactly for hooks on no Function, Note [Hooks on no
Function] in core/trace/event_table.h), and a comm hook's bucket collectives
(Note [A comm hook's collectives] in core/ddp/process_group.h)."""

import os
import re
import subprocess
import unittest

import torch_util as tu

STEPS = 9
LAYERS = (16, 32, 32, 4)   # the runtime scenarios' MLP (DdpScenarioOptions::layers)
HOOK_STEPS = 3
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "trace-format.md")
# The runtime's buckets: the first 1 KiB, then 4 KiB (DdpScenarioOptions);
# PyTorch's first bucket is dist._DEFAULT_FIRST_BUCKET_BYTES ("User can set
# [it] to tune DDP first bucket", distributed.py), the others bucket_cap_mb.
FIRST_BUCKET_BYTES = 1024
BUCKET_MB = 4096 / 2 ** 20


def small_buckets():
    import torch.distributed as dist
    dist._DEFAULT_FIRST_BUCKET_BYTES = FIRST_BUCKET_BYTES


def mlp():
    import torch
    layers = []
    for i in range(len(LAYERS) - 1):
        layers.append(torch.nn.Linear(LAYERS[i], LAYERS[i + 1]))
        if i + 2 < len(LAYERS):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def kept_alive(rank, world, prefix):
    """The runtime's kept-alive scenario (core/scenarios/ddp_scenarios.cpp,
    RankRun::train) in PyTorch."""
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    with tu.maybe_recording(prefix):
        tu.init_group(rank, world)
        small_buckets()
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        kept = []
        ddp = DDP(model, bucket_cap_mb=BUCKET_MB)
        accumulated = False
        for step in range(STEPS):
            if step > 0 and step in (STEPS // 3, 2 * STEPS // 3):
                kept.append(ddp)   # the reference the program keeps
                ddp = DDP(model, bucket_cap_mb=BUCKET_MB)
            micro = step % 2 == 1 and step + 1 < STEPS
            x, y = torch.randn(16, LAYERS[0]), torch.randint(0, LAYERS[-1], (16,))
            if not accumulated:
                opt.zero_grad()
            if micro:
                with ddp.no_sync():
                    F.cross_entropy(ddp(x), y).backward()
            else:
                F.cross_entropy(ddp(x), y).backward()
                opt.step()
            accumulated = micro
        import torch.distributed as dist
        dist.barrier()
        del kept, ddp
        import gc
        gc.collect()
        dist.destroy_process_group()   # inside the recording, as the scenario's


def comm_hook(state, bucket):
    import torch.distributed as dist
    averaged = bucket.buffer() / dist.get_world_size()
    fut = dist.all_reduce(averaged, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def with_comm_hook(rank, world, prefix):
    """tests/torch/ddp_comm_hook_runtime.cpp in PyTorch."""
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    with tu.maybe_recording(prefix):
        tu.init_group(rank, world)
        small_buckets()
        model = mlp()
        ddp = DDP(model, bucket_cap_mb=BUCKET_MB)
        ddp.register_comm_hook(None, comm_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(HOOK_STEPS):
            x, y = torch.randn(16, LAYERS[0]), torch.randint(0, LAYERS[-1], (16,))
            opt.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
        import torch.distributed as dist
        dist.barrier()
        del ddp
        dist.destroy_process_group()


def bridge_events(worker, name):
    prefix = os.path.join(tu.OUT, f"parity_{name}")
    tu.run_ranks_once(worker, 2, (prefix,), timeout=240)
    return [e for r in range(2) for e in tu.events(f"{prefix}.rank{r}.hstrace")]


_runtime = {}


def runtime_events(name):
    if name not in _runtime:
        path = os.path.join(tu.OUT, f"parity_{name}_runtime.hstrace")
        if name == "kept_alive":
            tu.cli("record", "kept-alive", "--world-size", 2, "--steps", STEPS, "-o", path, check=0)
        else:
            exe = os.environ.get("HOOKSCOPE_COMM_HOOK_RUNTIME", "")
            if not exe:
                raise unittest.SkipTest("HOOKSCOPE_COMM_HOOK_RUNTIME is not set (tests/torch/CMakeLists.txt sets it)")
            r = subprocess.run([exe, path], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise AssertionError(f"{exe}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        _runtime[name] = tu.events(path)
    return _runtime[name]


def group(e):
    """What fields are compared within: the kind, and a hook event's hook kind."""
    return f"{e['kind']}/{e['hook_kind']}" if "hook_kind" in e else e["kind"]


def slots(e):
    """The record's slots this event fills (not zero), from the JSON Lines
    export (hookscope-cli export --format jsonl, core/export/jsonl.cpp)."""
    out = set()
    if "node" in e:
        out.add("node")
    if e.get("key"):
        out.add("key")
    if "owner" in e:
        out.add("owner")
    if "actor" in e or "by" in e:
        out.add("actor")
    # hook_remove's arg is its cause, compared by value (test_reducer_hooks_removed_by_their_reducer)
    if "arg" in e or e.get("text"):
        out.add("arg")
    if e.get("sub"):
        out.add("sub")
    return out


def fields_by_group(events):
    seen = {}
    for e in events:
        seen.setdefault(group(e), set()).update(slots(e))
    return seen


def documented_exceptions():
    """{(kind, slot or None for the whole kind): writer} from docs/trace-format.md."""
    with open(DOCS) as f:
        text = f.read()
    section = text.split("### What one writer writes and the other does not", 1)
    if len(section) < 2:
        raise AssertionError(f"{DOCS} has no section 'What one writer writes and the other does not'")
    body = section[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    out = {}
    row = re.compile(r"^\| `(\w+)` \| (?:`\w+` \((\w+)\)|the kind) \| (runtime|bridge) \| .+\|$")
    for line in body.splitlines():
        m = row.match(line)
        if m:
            out[(m.group(1), m.group(2))] = m.group(3)
    if not out:
        raise AssertionError(f"no rows read from {DOCS}'s exception table")
    return out


def one_sided(runtime, bridge):
    """{(group, slot or None for the whole kind): writer} of what one side
    writes and the other does not."""
    rt, br = fields_by_group(runtime), fields_by_group(bridge)
    out = {}
    for g in sorted(set(rt) | set(br)):
        if g not in br or g not in rt:
            out[(g, None)] = "runtime" if g in rt else "bridge"
            continue
        for slot in sorted(rt[g] ^ br[g]):
            out[(g, slot)] = "runtime" if slot in rt[g] else "bridge"
    return out


def differences(runtime, bridge):
    """What one side writes and the other does not, less what the docs name."""
    allowed = documented_exceptions()
    problems = []
    for (g, slot), writer in one_sided(runtime, bridge).items():
        if allowed.get((g.split("/")[0], slot)) != writer:
            what = "writes this kind" if slot is None else f"fills {slot}"
            problems.append(f"{g}: only the {writer} {what}")
    return problems


def on_no_function(e):
    """Note [Hooks on no Function] (trace::hook_on_no_function)."""
    hk = e["hook_kind"]
    if hk == "comm_hook":
        return True
    if not hk.startswith("module_"):
        return False
    return e["kind"] != "hook_fire" or hk in ("module_forward_pre", "module_forward")


class RuntimeBridgeParity(unittest.TestCase):
    def both(self, name):
        worker = kept_alive if name == "kept_alive" else with_comm_hook
        return runtime_events(name), bridge_events(worker, name)

    def test_kept_alive_same_fields_per_kind(self):
        runtime, bridge = self.both("kept_alive")
        self.assertEqual(differences(runtime, bridge), [])

    def test_comm_hook_same_fields_per_kind(self):
        runtime, bridge = self.both("comm_hook")
        self.assertEqual(differences(runtime, bridge), [])

    def test_every_documented_exception_is_seen(self):
        # The docs' list stays true: each row is a difference one of the two
        # programs shows (a row whose difference is gone is deleted there).
        seen = set()
        for name in ("kept_alive", "comm_hook"):
            for (g, slot), writer in one_sided(*self.both(name)).items():
                seen.add((g.split("/")[0], slot, writer))
        for (kind, slot), writer in documented_exceptions().items():
            self.assertIn((kind, slot, writer), seen, f"docs/trace-format.md: {kind} {slot or 'the kind'} "
                          f"by the {writer} only, which neither program shows")

    def test_reducer_hooks_removed_by_their_reducer(self):
        runtime, bridge = self.both("kept_alive")
        for side, ev in (("runtime", runtime), ("bridge", bridge)):
            built = [e for e in ev if e["kind"] == "reducer_constructed"]
            gone = [e for e in ev if e["kind"] == "reducer_destroyed"]
            self.assertEqual(len(built), 6, f"{side}: three Reducers a rank")
            self.assertEqual(len(gone), 6, f"{side}: each destroyed at the end")
            params = 2 * (len(LAYERS) - 1)
            self.assertEqual({e["arg"] for e in built}, {params}, side)
            self.assertEqual({e.get("actor") for e in gone}, {params}, f"{side}: hooks its destructor removed")
            removed = [e for e in ev if e["kind"] == "hook_remove"]
            self.assertEqual(len(removed), 6 * params, side)
            self.assertEqual({(e["hook_kind"], e["cause"]) for e in removed}, {("post", "by_key")}, side)
            self.assertTrue(all(e["by_label"] == e["owner_label"] for e in removed), side)

    def test_hook_events_name_their_function(self):
        for name in ("kept_alive", "comm_hook"):
            for side, ev in zip(("runtime", "bridge"), self.both(name)):
                for e in ev:
                    if "hook_kind" in e:
                        self.assertEqual("node" in e, not on_no_function(e), f"{name}, {side}: {e}")

    def test_comm_hook_buckets_reduced_by_its_collective(self):
        # Note [A comm hook's collectives]: fire, bucket ready, the hook's
        # allreduce begun with the Reducer and the bucket, ended: in both.
        for side, ev in zip(("runtime", "bridge"), self.both("comm_hook")):
            for rank in (0, 1):
                mine = [e for e in ev if e["rank"] == rank]
                fires = [e for e in mine if e["kind"] == "hook_fire" and e["hook_kind"] == "comm_hook"]
                ready = [e for e in mine if e["kind"] == "bucket_ready"]
                self.assertTrue(fires, f"{side} rank {rank}")
                self.assertEqual([e.get("arg", 0) for e in ready], [f["bucket"] for f in fires], side)
                self.assertEqual(len(ready), len(fires), f"{side} rank {rank}: a bucket ready per hook call")
                begun = {e["key"]: e for e in mine if e["kind"] == "collective_begin"}
                ended = {e["key"] for e in mine if e["kind"] == "collective_end"}
                for f, r in zip(fires, ready):
                    self.assertLess(f["index"], r["index"], f"{side}: the fire, then the hook's allreduce")
                    c = begun.get(r["key"])
                    self.assertIsNotNone(c, f"{side}: bucket ready {r} has its collective begun")
                    self.assertEqual(c.get("owner_label"), f["owner_label"], side)
                    self.assertEqual(c.get("actor", 0), f["bucket"], f"{side}: the bucket's collective")
                    self.assertEqual(c.get("arg"), f["bytes"], f"{side}: of the bucket's bytes")
                    self.assertIn(r["key"], ended, f"{side}: and ended, so the bucket reads reduced")


if __name__ == "__main__":
    tu.main()
