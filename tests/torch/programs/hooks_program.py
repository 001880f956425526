"""A user's program with every Python hook kind, recorded by the tests with
`python -m hookscope.record` (test_record.py). Writes what PyTorch did so the
test can compare the trace with it, and what it computed (losses, parameters:
the same bits with and without recording, as torch_util.digest writes them)."""

import hashlib
import json
import sys

import torch

steps = int(sys.argv[1])
report = sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
fired = {"weight": 0, "output": 0, "post": 0, "pre": 0, "forward": 0, "backward": 0}


def count(name):
    def hook(*args):
        fired[name] += 1
    return hook


weight_handle = model[0].weight.register_hook(count("weight"))
model[2].register_forward_hook(count("forward"))
model.register_full_backward_hook(count("backward"))
losses = []
for step in range(steps):
    x = torch.randn(3, 4, requires_grad=True)
    y = model(x)
    y.register_hook(count("output"))
    y.retain_grad()
    post = y.grad_fn.register_hook(count("post"))
    y.grad_fn.register_prehook(count("pre"))
    loss = y.sum()
    loss.backward()
    losses.append(loss.item())
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    post.remove()
    if step == 0:
        weight_handle.remove()
fired["result"] = {"losses": [x.hex() for x in losses],
                   "params": {n: hashlib.sha256(p.detach().numpy().tobytes()).hexdigest()
                              for n, p in model.named_parameters()}}
with open(report, "w") as f:
    json.dump(fired, f)
sys.exit(3)  # the exit status must come through hookscope.record
