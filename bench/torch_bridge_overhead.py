#!/usr/bin/python3
"""Cost of recording a real PyTorch training step with the torch bridge
(python/hookscope): MLP 784-256-256-10, batch 64 per rank, SGD, DDP on 2
processes (gloo, 127.0.0.1), one intra-op thread per process. One run
alternates short blocks of steps without and with a recording (a fresh
hookscope.start() per block, so both see the same process, caches and
machine load; the figure is the median of the per-block ratios), and pairs of steps in one recording, one paused and one
recorded (the figure least disturbed by a shared machine's load: the median
of the per-pair ratios).
Also: trace bytes and events per recorded step, events/s written.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_bridge_overhead.py [ROUNDS] [STEPS]

Prints one JSON line (rank 0's view; both ranks run the same steps)."""
import json
import os
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


def worker(rank, world, port, rounds, steps, tmp, out):
    import hookscope
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(64, 784)
    y = torch.randint(0, 10, (64,))

    def block(n):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
        return times

    block(10)  # warm-up
    # (1) Short blocks: no hookscope at all, then a fresh recording. A
    # recording's first step (it names the parameters: one pass over the
    # heap) is timed apart; the others are compared with the steps just
    # before, block by block.
    off, on, ratios, first, sizes, events, rec_s = [], [], [], [], [], [], []
    for r in range(rounds):
        a = block(steps)
        rec = hookscope.start(os.path.join(tmp, f"bench{r}.rank{rank}.hstrace"))
        t0 = time.perf_counter()
        first += block(1)
        b = block(steps)
        rec_s.append(time.perf_counter() - t0)
        stats = rec.finish()
        sizes.append(stats["bytes"] / (steps + 1))
        events.append(stats["events"] / (steps + 1))
        off += a
        on += b
        ratios.append(statistics.median(b) / statistics.median(a))
        dist.barrier()
    # (2) Pairs of steps in one recording, one recorded and one paused: the
    # same seconds of machine load for both, so the fairest figure on a
    # shared machine (paused = the patched functions' fast path only).
    rec = hookscope.start(os.path.join(tmp, f"pairs.rank{rank}.hstrace"))
    block(3)
    pair_ratios, paused, recorded = [], [], []
    for _ in range(max(200, rounds * steps)):
        hookscope.pause()
        a = block(1)[0]
        hookscope.resume()
        b = block(1)[0]
        paused.append(a)
        recorded.append(b)
        pair_ratios.append(b / a)
    rec.finish()
    if rank == 0:
        med = statistics.median
        out.put({
            "blocks": {"ms_per_step_off": med(off) * 1e3, "ms_per_step_on": med(on) * 1e3,
                       "overhead_pct": (med(on) / med(off) - 1) * 100,
                       "overhead_pct_median_block": (med(ratios) - 1) * 100,
                       "ms_first_recorded_step": med(first) * 1e3,
                       "rounds": rounds, "steps_per_block": steps},
            "pairs": {"ms_per_step_paused": med(paused) * 1e3,
                      "ms_per_step_recorded": med(recorded) * 1e3,
                      "overhead_pct_median_pair": (med(pair_ratios) - 1) * 100,
                      "pairs": len(pair_ratios)},
            "trace_bytes_per_step": med(sizes),
            "events_per_step": med(events),
            "events_per_s": med(e * (steps + 1) / s for e, s in zip(events, rec_s)),
        })
    dist.destroy_process_group()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    world = 2
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=worker, args=(r, world, port, rounds, steps, tmp, out))
                 for r in range(world)]
        for p in procs:
            p.start()
        result = out.get(timeout=600)
        for p in procs:
            p.join(60)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
