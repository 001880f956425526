#!/usr/bin/python3
"""PyTorch DDP reference for bench_ddp: MLP 784-256-256-10, batch 64 per rank,
SGD, gloo backend on 127.0.0.1, one process per rank, one intra-op thread per
process (as hookscope's ranks run one thread each): torch.set_num_threads(1)
does not reach Debian's OpenBLAS (pthreads build, which PyTorch's matmuls
call), so OPENBLAS_NUM_THREADS=1 is set before the rank processes import
torch; without it each rank ran its matmuls on two threads. Prints one JSON line:
{"ms_per_step": median over the timed steps (rank 0), "steps": N}.
Run with /usr/bin/python3 (Debian's python3-torch)."""
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, steps, warmup, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
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
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    if rank == 0:
        out.put(statistics.median(times) * 1e3)
    dist.destroy_process_group()


def main():
    # Read by OpenBLAS when the spawned ranks load it (see the docstring).
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    warmup = 5
    world = 2
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, world, port, steps, warmup, out))
             for r in range(world)]
    for p in procs:
        p.start()
    ms = out.get(timeout=300)
    for p in procs:
        p.join()
    print(json.dumps({"ms_per_step": ms, "steps": steps}))


if __name__ == "__main__":
    main()
