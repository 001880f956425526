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

What load moves less than CPU time (docs/torch-bridge.md, "Where the rest
goes"), medians per step off and on: thread_usage_per_step and
process_usage_per_step (rusage: user and system us, minor faults,
voluntary and involuntary switches, gc collections), threads_per_step (CPU
us, run-queue wait us, switches, migrations of the training thread, of the
recording's trace writer and of the other threads), and
thread_cpu_p10_ratio (the fastest tenth of the steps, on vs off).

--profile: cProfile of rank 0's recorded steps, the top functions on stderr.
--pin: each rank, and every thread it starts (Gloo's, the trace writer's),
on a core of its own (rank r on core r mod the cores there are), as a
launcher's CPU affinity does: the two ranks stop sharing caches and cores
with each other, and the figure shows what recording costs a rank itself.
Prints one JSON line (rank 0's view; both ranks run the same steps)."""
import gc
import json
import os
import resource

# One BLAS thread per rank, really: OpenBLAS's own pool (torch.set_num_threads
# does not stop it) spins in sched_yield and, on a small shared machine,
# makes the figure mostly noise. Set before torch loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import socket
import statistics
import sys
import tempfile
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# gc<n>: Python's cyclic collections of generation n (the interpreter's;
# they run on the thread that allocates).
USAGE_FIELDS = ("user_us", "sys_us", "minflt", "nvcsw", "nivcsw", "gc0", "gc1", "gc2")


def rusage(who):
    u = resource.getrusage(who)
    return (u.ru_utime * 1e6, u.ru_stime * 1e6, u.ru_minflt, u.ru_nvcsw, u.ru_nivcsw,
            *(g["collections"] for g in gc.get_stats()))


def per_step(u0, u1, n):
    """USAGE_FIELDS per step between two rusage() readings."""
    return [(b - a) / n for a, b in zip(u0, u1)]


def task_stats():
    """{tid: (CPU ns, run-queue wait ns, voluntary + involuntary switches,
    migrations to another core)} of every thread of this process, from
    /proc (schedstat: nanoseconds, where rusage's user/system split is in
    clock ticks)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run_ns, wait_ns, _ = (int(x) for x in f.read().split())
            with open(f"/proc/self/task/{tid}/status") as f:
                switches = sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
            with open(f"/proc/self/task/{tid}/sched") as f:
                migrations = next((int(line.split()[-1]) for line in f if line.startswith("se.nr_migrations")), 0)
        except (OSError, ValueError):
            continue  # the thread ended
        out[int(tid)] = (run_ns, wait_ns, switches, migrations)
    return out


THREAD_GROUPS = ("training", "recording", "other")


def by_thread_group(t0, t1, training_tid, recording_tids, n):
    """Per step, [CPU us, run-queue wait us, switches, migrations] of the training thread,
    the threads the recording started (its trace writer), and the process's
    other threads (Gloo's)."""
    groups = {g: [0.0, 0.0, 0.0, 0.0] for g in THREAD_GROUPS}
    for tid, (run, wait, sw, mig) in t1.items():
        before = t0.get(tid, (0, 0, 0, 0))
        g = "training" if tid == training_tid else ("recording" if tid in recording_tids else "other")
        groups[g][0] += (run - before[0]) / 1e3 / n
        groups[g][1] += (wait - before[1]) / 1e3 / n
        groups[g][2] += (sw - before[2]) / n
        groups[g][3] += (mig - before[3]) / n
    return groups


def quantile(values, q):
    return sorted(values)[int(q * (len(values) - 1))]


def usage_medians(blocks):
    """{field: median per step over the blocks} for rusage blocks."""
    return {f: round(statistics.median(b[i] for b in blocks), 3) for i, f in enumerate(USAGE_FIELDS)}


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
    # Per block, per step: the training thread's and the process's rusage
    # (user and system CPU, minor faults, voluntary and involuntary context
    # switches): what callgrind's instruction counts leave out.
    usage, proc_usage = [], []
    threads = []  # per block: by_thread_group()
    training_tid = threading.get_native_id()
    recording_tids = set()  # the threads hookscope.start() started

    def block(n):
        times = []
        u0, p0, k0 = rusage(resource.RUSAGE_THREAD), rusage(resource.RUSAGE_SELF), task_stats()
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
        usage.append(per_step(u0, rusage(resource.RUSAGE_THREAD), n))
        proc_usage.append(per_step(p0, rusage(resource.RUSAGE_SELF), n))
        threads.append(by_thread_group(k0, task_stats(), training_tid, recording_tids, n))
        return times

    block(10)  # warm-up
    med = statistics.median
    off, on, ratios, first, sizes, events, rates = [], [], [], [], [], [], []
    start_s, start_cpu, first_cpu = [], [], []
    cpu_off, cpu_on, cpu_ratios = [], [], []
    thread_off, thread_on, thread_ratios = [], [], []
    use_off, use_on, proc_off, proc_on, threads_off, threads_on = [], [], [], [], [], []

    def recorded(r):
        before = set(task_stats())
        t0, m0 = time.perf_counter(), time.thread_time()
        rec = hookscope.start(os.path.join(tmp, f"bench{r}.rank{rank}.hstrace"))
        recording_tids.update(set(task_stats()) - before)
        start_s.append(time.perf_counter() - t0)
        start_cpu.append(time.thread_time() - m0)
        first.extend(block(1))  # names the parameters: one pass over the heap
        cpu.pop()
        usage.pop()
        proc_usage.pop()
        threads.pop()
        first_cpu.append(main_cpu.pop())
        t0 = time.perf_counter()
        c0 = time.process_time()
        b = block(steps)
        elapsed = time.perf_counter() - t0
        stats = rec.finish()  # the writer's last flush counts as the block's CPU
        recording_tids.clear()
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
        first_is_off = r % 2 == 0
        use_off.append(usage[-2] if first_is_off else usage[-1])
        use_on.append(usage[-1] if first_is_off else usage[-2])
        proc_off.append(proc_usage[-2] if first_is_off else proc_usage[-1])
        proc_on.append(proc_usage[-1] if first_is_off else proc_usage[-2])
        threads_off.append(threads[-2] if first_is_off else threads[-1])
        threads_on.append(threads[-1] if first_is_off else threads[-2])
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
                   # The fastest tenth of the steps: what a step costs the
                   # thread itself when nothing else (load, the rank's other
                   # threads, the other rank) gets in its way.
                   "thread_cpu_ms_p10_off": quantile(thread_off, 0.1) * 1e3,
                   "thread_cpu_ms_p10_on": quantile(thread_on, 0.1) * 1e3,
                   "thread_cpu_p10_ratio": quantile(thread_on, 0.1) / quantile(thread_off, 0.1),
                   "ms_first_recorded_step": med(first) * 1e3,
                   "ms_first_step_extra": (med(first) - med(off)) * 1e3,
                   "ms_start": med(start_s) * 1e3,
                   "thread_cpu_ms_start": med(start_cpu) * 1e3,
                   "thread_cpu_ms_first_step_extra": (med(first_cpu) - med(thread_off)) * 1e3,
                   "pairs": pairs, "pinned": pin, "steps_per_block": steps, "model": model_name,
                   "torch": torch.__version__},
            # Medians per step: the training thread's and the whole process's.
            "thread_usage_per_step": {"off": usage_medians(use_off), "on": usage_medians(use_on)},
            "process_usage_per_step": {"off": usage_medians(proc_off), "on": usage_medians(proc_on)},
            # Per step (medians over the blocks): CPU us, run-queue wait us,
            # context switches and migrations of the training thread, of the recording's own
            # threads (the trace writer), and of the other threads (Gloo's).
            "threads_per_step": {
                side: {g: [round(statistics.median(b[g][i] for b in blocks), 2) for i in range(4)]
                       for g in THREAD_GROUPS}
                for side, blocks in (("off", threads_off), ("on", threads_on))},
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
