#!/usr/bin/python3
"""Cost of recording a real PyTorch training step with the torch bridge
(python/hookscope), DDP on 2 processes (gloo, 127.0.0.1), one intra-op
thread per process, SGD. --model transformer (the default): nn.TransformerEncoder,
2 layers, d_model 64, 4 heads, sequence 32, batch 16 per rank; --model mlp:
784-256-256-10, batch 64 per rank.

Interleaved A/B, made for a loaded machine: PAIRS pairs of blocks of STEPS
steps, one block without hookscope (A: nothing patched) and one inside a
fresh recording (B: hookscope.start(), one untimed step that names the
parameters, STEPS timed steps, finish()), the order alternating pair by
pair (AB, BA, ...) so that drifting load falls on both. Figures: the median
step time of each side, their ratio, and the median of the per-pair ratios
(each pair saw the same seconds of load). Also: trace bytes and events per
recorded step, events/s written, and (a second, finer figure) pairs of
single steps in one recording, paused vs recorded.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_bridge_overhead.py [PAIRS] [STEPS] [--profile] [--pin] [--model mlp]

The first recorded step: ms_start (hookscope.start(), the pass over the heap
of Note [Hooks present at start]) and ms_first_step_extra (the first step of
a recording, which names the parameters, minus the median unrecorded step).

--profile: cProfile of rank 0's recorded steps, the top functions on stderr.
--pin: each rank, and every thread it starts (Gloo's, the trace writer's),
on a core of its own (rank r on core r mod the cores there are), as a
launcher's CPU affinity does: the two ranks stop sharing caches and cores
with each other, and the figure shows what recording costs a rank itself.
Prints one JSON line (rank 0's view; both ranks run the same steps)."""
import json
import os

# One BLAS thread per rank, really: OpenBLAS's own pool (torch.set_num_threads
# does not stop it) spins in sched_yield and, on a small shared machine,
# makes the figure mostly noise. Set before torch loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import socket
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_model(name):
    """(model, input, loss of the output)."""
    if name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 10))
        y = torch.randint(0, 10, (64,))
        return model, torch.randn(64, 784), lambda out: torch.nn.functional.cross_entropy(out, y)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, num_layers=2)
    y = torch.randn(32, 16, 64)
    return model, torch.randn(32, 16, 64), lambda out: torch.nn.functional.mse_loss(out, y)


def worker(rank, world, port, pairs, steps, profile, model_name, tmp, out, pin=False):
    if pin:
        # Before torch starts a thread: later threads inherit the mask.
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[rank % len(os.sched_getaffinity(0))]})
    import hookscope
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # Debian's 2.6 is built without libuv, the TCPStore's default there.
    os.environ.setdefault("USE_LIBUV", "0")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model, x, loss_of = make_model(model_name)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

    cpu = []  # CPU seconds per step of each block (every thread of the process)
    main_cpu = []  # per step: CPU seconds of the training thread (no waiting for a core)

    def block(n):
        times = []
        c0 = time.process_time()
        for _ in range(n):
            m0 = time.thread_time()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_of(ddp(x))
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            main_cpu.append(time.thread_time() - m0)
        cpu.append((time.process_time() - c0) / n)
        return times

    block(10)  # warm-up
    med = statistics.median
    off, on, ratios, first, sizes, events, rates = [], [], [], [], [], [], []
    start_s, start_cpu, first_cpu = [], [], []
    cpu_off, cpu_on, cpu_ratios = [], [], []
    thread_off, thread_on, thread_ratios = [], [], []

    def recorded(r):
        t0, m0 = time.perf_counter(), time.thread_time()
        rec = hookscope.start(os.path.join(tmp, f"bench{r}.rank{rank}.hstrace"))
        start_s.append(time.perf_counter() - t0)
        start_cpu.append(time.thread_time() - m0)
        first.extend(block(1))  # names the parameters: one pass over the heap
        cpu.pop()
        first_cpu.append(main_cpu.pop())
        t0 = time.perf_counter()
        c0 = time.process_time()
        b = block(steps)
        elapsed = time.perf_counter() - t0
        stats = rec.finish()  # the writer's last flush counts as the block's CPU
        cpu[-1] = (time.process_time() - c0) / steps
        sizes.append(stats["bytes"] / (steps + 1))
        events.append(stats["events"] / (steps + 1))
        rates.append(events[-1] * steps / elapsed)
        return b

    profiler = None
    if profile and rank == 0:
        import cProfile
        profiler = cProfile.Profile()
    for r in range(pairs):
        dist.barrier()
        if r % 2 == 0:
            a = block(steps)
            ta = main_cpu[-steps:]
            b = recorded(r)
            tb = main_cpu[-steps:]
        else:
            b = recorded(r)
            tb = main_cpu[-steps:]
            a = block(steps)
            ta = main_cpu[-steps:]
        thread_off += ta
        thread_on += tb
        thread_ratios.append(med(tb) / med(ta))
        off += a
        on += b
        ratios.append(med(b) / med(a))
        c_off, c_on = (cpu[-2], cpu[-1]) if r % 2 == 0 else (cpu[-1], cpu[-2])
        cpu_off.append(c_off)
        cpu_on.append(c_on)
        cpu_ratios.append(c_on / c_off)
    if profiler:
        rec = hookscope.start(os.path.join(tmp, f"profile.rank{rank}.hstrace"))
        block(1)
        profiler.enable()
        block(steps * 4)
        profiler.disable()
        rec.finish()
        import pstats
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    elif profile:
        rec = hookscope.start(os.path.join(tmp, f"profile.rank{rank}.hstrace"))
        block(1 + steps * 4)
        rec.finish()
    # Pairs of single steps in one recording, one paused and one recorded:
    # the same second of machine load for both (paused = the patched
    # functions' fast path only).
    dist.barrier()
    rec = hookscope.start(os.path.join(tmp, f"pairs.rank{rank}.hstrace"))
    block(3)
    step_ratios = []
    for _ in range(max(50, pairs * 4)):
        hookscope.pause()
        a = block(1)[0]
        hookscope.resume()
        b = block(1)[0]
        step_ratios.append(b / a)
    rec.finish()
    if rank == 0:
        out.put({
            "ab": {"ms_per_step_off": med(off) * 1e3, "ms_per_step_on": med(on) * 1e3,
                   "ratio_of_medians": med(on) / med(off),
                   "median_pair_ratio": med(ratios),
                   "pair_ratios": [round(x, 4) for x in ratios],
                   "cpu_ms_per_step_off": med(cpu_off) * 1e3, "cpu_ms_per_step_on": med(cpu_on) * 1e3,
                   "cpu_ratio_of_medians": med(cpu_on) / med(cpu_off),
                   "cpu_median_pair_ratio": med(cpu_ratios),
                   "cpu_pair_ratios": [round(x, 4) for x in cpu_ratios],
                   "thread_cpu_ms_per_step_off": med(thread_off) * 1e3,
                   "thread_cpu_ms_per_step_on": med(thread_on) * 1e3,
                   "thread_cpu_ratio_of_medians": med(thread_on) / med(thread_off),
                   "thread_cpu_median_pair_ratio": med(thread_ratios),
                   "ms_first_recorded_step": med(first) * 1e3,
                   "ms_first_step_extra": (med(first) - med(off)) * 1e3,
                   "ms_start": med(start_s) * 1e3,
                   "thread_cpu_ms_start": med(start_cpu) * 1e3,
                   "thread_cpu_ms_first_step_extra": (med(first_cpu) - med(thread_off)) * 1e3,
                   "pairs": pairs, "pinned": pin, "steps_per_block": steps, "model": model_name,
                   "torch": torch.__version__},
            "paused_vs_recorded_steps": {"median_ratio": med(step_ratios),
                                         "pairs": len(step_ratios)},
            "trace_bytes_per_step": med(sizes),
            "events_per_step": med(events),
            "events_per_s": med(rates),
        })
    dist.destroy_process_group()


def take_model_arg(argv):
    """The --model NAME in `argv` (taken out of it), "transformer" without one."""
    model_name = "transformer"
    if "--model" in argv:
        i = argv.index("--model")
        model_name = argv[i + 1] if i + 1 < len(argv) else ""
        del argv[i:i + 2]
    if model_name not in ("transformer", "mlp"):
        sys.exit("--model: transformer or mlp")
    return model_name


def main():
    argv = sys.argv[1:]
    model_name = take_model_arg(argv)
    args = [a for a in argv if not a.startswith("--")]
    profile = "--profile" in argv
    pin = "--pin" in argv
    pairs = int(args[0]) if args else 15
    steps = int(args[1]) if len(args) > 1 else 20
    if pairs < 7:
        sys.exit("at least 7 pairs, for a median that means something")
    world = 2
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=worker, args=(r, world, port, pairs, steps, profile, model_name, tmp, out, pin))
                 for r in range(world)]
        for p in procs:
            p.start()
        result = out.get(timeout=1200)
        for p in procs:
            p.join(60)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
