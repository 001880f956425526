#!/usr/bin/python3
"""Instructions the torch bridge adds to a training step, counted by
valgrind's callgrind: a figure load cannot move, where
bench/torch_bridge_overhead.py's CPU times on a small shared machine move
by several percent from run to run.

The step is bench/torch_bridge_overhead.py's (--model transformer, the
default, or mlp), DDP on one rank (gloo; the Reducer's hooks and its
bucket allreduces run as with more ranks). Two processes under callgrind,
one not recorded and one recorded (hookscope.start() and one step before
counting starts, so the parameter naming of the first step is left out);
each counts STEPS steps only (callgrind_control switches counting on and
off around them), thread by thread.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_bridge_instructions.py [STEPS] [--model mlp] [--cache-sim]

Prints one JSON line: instructions per step of the training thread off and
on and their ratio, and the other threads' (the trace writer's, Gloo's)
per step off and on. Takes a few minutes (callgrind runs ~50x slower).
Instructions are not time: a cache miss costs more than an add. Read it
beside the CPU-time figures, not instead of them; --cache-sim adds
callgrind's simulated cache misses (D1, LL) and branch mispredictions of
the training thread a step (slower still). The other threads' figure
overstates the writer's share: a thread hands its events over once they
are 100 ms old (Note [Partial chunks reach the sink]), and at callgrind's
speed that is every few events instead of every few thousand."""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child(steps, model_name, record):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Debian's 2.6 is built without libuv, the TCPStore's default there.
    os.environ.setdefault("USE_LIBUV", "0")
    import torch
    import torch.distributed as dist
    sys.path.insert(0, HERE)
    from torch_bridge_overhead import make_model
    import hookscope
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    model, x, loss_of = make_model(model_name)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(ddp(x)).backward()
        opt.step()

    for _ in range(5):
        step()
    tmp = tempfile.mkdtemp()
    rec = hookscope.start(os.path.join(tmp, "b.hstrace")) if record else None
    step()
    control = ["callgrind_control", "-i", "on", str(os.getpid())]
    subprocess.run(control, check=True, stdout=subprocess.DEVNULL)
    for _ in range(steps):
        step()
    control[2] = "off"
    subprocess.run(control, check=True, stdout=subprocess.DEVNULL)
    if rec:
        rec.finish()
    shutil.rmtree(tmp, ignore_errors=True)
    dist.destroy_process_group()


def counted(prefix):
    """{thread number: {event: count}} from callgrind's per-thread files
    (events: Ir, and with --cache-sim D1mr, DLmr, ..., Bcm, Bim)."""
    out = {}
    for path in glob.glob(prefix + "*"):
        thread, names, totals = None, None, None
        with open(path) as f:
            for line in f:
                if line.startswith("thread:"):
                    thread = int(line.split()[1])
                elif line.startswith("events:"):
                    names = line.split()[1:]
                elif line.startswith("totals:"):
                    # Not "summary:", which stays 0 when counting was switched on late.
                    totals = [int(x) for x in line.split()[1:]]
        if thread is not None and names and totals:
            mine = out.setdefault(thread, {})
            for name, value in zip(names, totals):
                mine[name] = mine.get(name, 0) + value
    return out


# --cache-sim: callgrind also simulates the caches (D1, LL) and the branch
# predictor: what instructions alone do not say of a cost in time.
SIMULATE = ["--cache-sim=yes", "--branch-sim=yes"]


def run(steps, model_name, record, tmp, simulate=False):
    prefix = os.path.join(tmp, "on" if record else "off")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
           *(SIMULATE if simulate else []),
           f"--callgrind-out-file={prefix}.%p", sys.executable, os.path.abspath(__file__),
           "--child", str(steps), model_name, "1" if record else "0"]
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    threads = counted(prefix + ".")
    if not threads.get(1, {}).get("Ir"):
        sys.exit(f"no count for the main thread in {prefix}.*: {threads}")
    main = {k: v / steps for k, v in threads.pop(1).items()}
    other = {}
    for counts in threads.values():
        for k, v in counts.items():
            other[k] = other.get(k, 0) + v / steps
    return main, other


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        child(int(argv[1]), argv[2], argv[3] == "1")
        return
    sys.path.insert(0, HERE)
    from torch_bridge_overhead import take_model_arg
    model_name = take_model_arg(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind (with callgrind_control) is not installed: scripts/setup.sh installs it")
    simulate = "--cache-sim" in argv
    argv = [a for a in argv if a != "--cache-sim"]
    steps = int(argv[0]) if argv else 10
    tmp = tempfile.mkdtemp(prefix="hookscope-callgrind-")
    keep = os.environ.get("KEEP_CALLGRIND")  # a folder: the raw files stay there
    if keep:
        tmp = keep
        os.makedirs(tmp, exist_ok=True)
    try:
        off_main, off_other = run(steps, model_name, False, tmp, simulate)
        on_main, on_other = run(steps, model_name, True, tmp, simulate)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    import torch
    result = {
        "model": model_name, "steps": steps, "torch": torch.__version__,
        "training_thread_instructions_per_step_off": round(off_main["Ir"]),
        "training_thread_instructions_per_step_on": round(on_main["Ir"]),
        "training_thread_ratio": round(on_main["Ir"] / off_main["Ir"], 4),
        "other_threads_instructions_per_step_off": round(off_other.get("Ir", 0)),
        "other_threads_instructions_per_step_on": round(on_other.get("Ir", 0)),
        "all_threads_ratio": round((on_main["Ir"] + on_other.get("Ir", 0)) /
                                   (off_main["Ir"] + off_other.get("Ir", 0)), 4),
    }
    if simulate:
        # Every simulated event a step, the training thread's, off and on.
        result["training_thread_per_step"] = {
            k: {"off": round(off_main.get(k, 0)), "on": round(on_main.get(k, 0)),
                "ratio": round(on_main.get(k, 0) / off_main[k], 4) if off_main.get(k) else None}
            for k in on_main}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
