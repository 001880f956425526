"""Child processes of a recorded program are recorded, since that is how most
DDP programs start their ranks (Note [Recorded child processes]): ranks started by torch.multiprocessing.spawn,
multiprocessing's spawn, forkserver and fork, and ranks launched by hand
with RANK/WORLD_SIZE each write PREFIX.rank<r>.hstrace (or .pid<pid> without
a rank); the parent names the files; a child that ran Python but could not
be recorded is said on stderr. (Debian's torchrun is broken in both
versions: not tested.) Every wait is bounded."""

import glob
import os
import subprocess
import sys
import unittest

import torch_util as tu

SPAWN_DDP = """\
import datetime, os, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def rank_main(rank, world, port):
    # Debian's 2.6 has no libuv: the classic TCPStore (tests/torch/torch_util.py).
    os.environ["USE_LIBUV"] = "0"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 1))
    kept = []   # old DDPs kept alive: their Reducer hooks stay (#21344)
    for step in range(3):
        ddp = DDP(model)
        kept.append(ddp)
        ddp(torch.ones(2, 4)).sum().backward()
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(rank_main, args=(2, int(sys.argv[1])), nprocs=2, join=True)
"""

MP_CHILD = """\
import os, sys
if os.environ.get("BREAK_HOOKSCOPE"):
    sys.modules["hookscope"] = None   # this child cannot load the bridge
import multiprocessing as mp
import torch

def work():
    a = torch.ones(3, requires_grad=True)
    a.register_hook(lambda g: g)
    (a * 2).sum().backward()
    print("child", os.getpid(), a.grad.tolist(), flush=True)

if __name__ == "__main__":
    if len(sys.argv) > 2:
        os.environ["BREAK_HOOKSCOPE"] = "1"
    p = mp.get_context(sys.argv[1]).Process(target=work)
    p.start()
    p.join(120)
    print("exit", p.exitcode, p.pid, flush=True)
"""

BY_HAND = """\
import datetime, os
import torch
import torch.distributed as dist
os.environ["USE_LIBUV"] = "0"   # Debian's 2.6 has no libuv
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
a = torch.ones(3, requires_grad=True)
a.register_hook(lambda g: g)
(a * (dist.get_rank() + 1)).sum().backward()
dist.destroy_process_group()
"""


def program(name, text):
    path = os.path.join(tu.OUT, f"children_{name}.py")
    with open(path, "w") as f:
        f.write(text)
    return path


def clean(stem):
    for f in glob.glob(glob.escape(stem) + ".*"):
        os.unlink(f)


def record(script, trace, *args, env=None, timeout=240):
    e = dict(os.environ)
    e.update(env or {})
    try:
        return subprocess.run([sys.executable, "-m", "hookscope.record", "-o", trace, script,
                               *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, env=e)
    except subprocess.TimeoutExpired as x:
        raise AssertionError(f"{script} hung: {x.stderr}")


class ChildrenTest(unittest.TestCase):
    def test_mp_spawn_ddp_a_trace_per_rank_and_growth_found(self):
        stem = os.path.join(tu.OUT, "spawn_ddp")
        clean(stem)
        r = record(program("spawn_ddp", SPAWN_DDP), stem + ".hstrace", tu.free_port())
        tu.expect(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        for rank in (0, 1):
            path = f"{stem}.rank{rank}.hstrace"
            tu.expect(os.path.exists(path), f"rank {rank}'s trace: {sorted(glob.glob(stem + '*'))}")
            tu.expect(f"-> {path}" in r.stderr, f"the parent names {path}: {r.stderr}")
            code, report = tu.check_json(path)
            growth = [f for f in report if f["kind"] == "hook_growth"]
            tu.expect(code == 1 and growth, f"check finds hook growth in rank {rank}: {report}")
        tu.expect(not glob.glob(stem + ".pid*"), "no file before the rank was known (nothing in it)")

    def test_multiprocessing_children_each_write_a_trace(self):
        script = program("mp", MP_CHILD)
        for method in ("spawn", "forkserver", "fork"):
            stem = os.path.join(tu.OUT, f"mp_{method}")
            clean(stem)
            r = record(script, stem + ".hstrace", method)
            tu.expect(r.returncode == 0 and "exit 0" in r.stdout, f"{method}: {r.stdout}{r.stderr}")
            pid = r.stdout.split("exit 0 ")[1].split()[0]
            path = f"{stem}.pid{pid}.hstrace"
            tu.expect(os.path.exists(path), f"{method}: the child's trace {path}: "
                                            f"{sorted(glob.glob(stem + '*'))}\n{r.stderr}")
            kinds = [e["kind"] for e in tu.events(path)]
            tu.expect(kinds.count("backward_begin") == 1 and kinds.count("hook_fire") == 1,
                      f"{method}: the child's backward and fire: {kinds}")
            tu.expect(f"child pid {pid}: " in r.stderr, f"{method}: the parent names it: {r.stderr}")

    def test_child_that_cannot_record_is_said(self):
        stem = os.path.join(tu.OUT, "mp_broken")
        clean(stem)
        r = record(program("mp", MP_CHILD), stem + ".hstrace", "spawn", "break")
        tu.expect(r.returncode == 0 and "exit 0" in r.stdout, f"{r.stdout}{r.stderr}")
        pid = r.stdout.split("exit 0 ")[1].split()[0]
        said = [line for line in r.stderr.splitlines() if "ran Python but is not recorded" in line]
        tu.expect(any(f"process {pid} " in line for line in said), f"the child says so: {r.stderr}")
        tu.expect(any(f"child pid {pid} " in line for line in said), f"the parent says so: {r.stderr}")

    def test_ranks_launched_by_hand(self):
        stem = os.path.join(tu.OUT, "by_hand")
        clean(stem)
        script = program("by_hand", BY_HAND)
        port = str(tu.free_port())
        procs = []
        for rank in (0, 1):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=port)
            procs.append(subprocess.Popen([sys.executable, "-m", "hookscope.record", "-o",
                                           stem + ".hstrace", script], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        try:
            outs = [p.communicate(timeout=180) for p in procs]
        finally:
            for p in procs:
                p.kill()
        for rank, (p, (_, err)) in enumerate(zip(procs, outs)):
            tu.expect(p.returncode == 0, f"rank {rank}: {err}")
            path = f"{stem}.rank{rank}.hstrace"
            tu.expect(f"-> {path}" in err, f"rank {rank} names its trace: {err}")
            kinds = [e["kind"] for e in tu.events(path)]
            tu.expect(kinds.count("hook_fire") == 1, f"rank {rank}: {kinds}")


if __name__ == "__main__":
    tu.main()
