"""A 2-rank DDP program as users write one: a small MLP, a few SGD steps.
Ranks launched by hand (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) or,
with SPAWN=1, by torch.multiprocessing.spawn. KILL_RANK1_AT=N kills rank 1
(SIGKILL) at step N: rank 0's allreduce fails at once (connection reset).
HANG_RANK1_AT=N stops rank 1 (SIGSTOP; the caller kills it): rank 0 waits
TIMEOUT_S seconds in the allreduce and fails. STEP_SLEEP_S=S: each step
then waits S seconds (as a real step's compute would; tests/torch/
test_killed_rank.py). Recorded through `python -m hookscope.record` by
tests/torch/test_gui.py (the timeline's start-up band, Note [Start-up band])."""

import datetime
import os
import signal
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(rank=None, world=2):
    if rank is not None:  # spawned
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world))
    os.environ["USE_LIBUV"] = "0"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = datetime.timedelta(seconds=float(os.environ.get("TIMEOUT_S", "30")))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kill_at = int(os.environ.get("KILL_RANK1_AT", "-1"))
    hang_at = int(os.environ.get("HANG_RANK1_AT", "-1"))
    pause = float(os.environ.get("STEP_SLEEP_S", "0"))
    for step in range(int(os.environ.get("STEPS", "5"))):
        if rank == 1 and step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if rank == 1 and step == hang_at:
            os.kill(os.getpid(), signal.SIGSTOP)
        loss = model(torch.randn(32, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(pause)
    dist.destroy_process_group()


if __name__ == "__main__":
    if os.environ.get("SPAWN"):
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        mp.spawn(main, nprocs=2)
    else:
        main()
