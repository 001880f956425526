"""A 2-rank DDP program on a transformer-sized graph: nn.TransformerEncoder,
2 layers, d_model 64 (bench/torch_bridge_overhead.py's model, shorter
sequences), 2 SGD steps. Its backward graph is ~120 Functions per rank, far
taller than the graph panel at readable text: tests/torch/test_gui_fit.py
records it (ranks by hand: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set)
and checks the GUI's fit of it (Note [Fit shows every rank])."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    os.environ["USE_LIBUV"] = "0"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0)
    model = DDP(nn.TransformerEncoder(layer, num_layers=2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4, 64), torch.randn(8, 4, 64)
    for _ in range(2):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
