"""What a real DDP Reducer says about parameters, on 2 ranks (gloo):
PyTorch #57776 / #22436 (which parameters did DDP see as unused?) with and
without find_unused_parameters, and "marked ready twice" (the same layer
under two reentrant checkpoints), and a rank that dies (the survivor's DDP
collective fails). The trace names the parameter, and
`check` reports it."""

import json
import os
import unittest

import torch_util as tu


def worker(rank, world, case, prefix, record=True):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.checkpoint import checkpoint

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(6, 6)
            self.head_a = torch.nn.Linear(6, 2)
            self.head_b = torch.nn.Linear(6, 2)   # never used by forward

        def forward(self, x):
            return self.head_a(torch.relu(self.body(x)))

    class Checkpointed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(6, 6)
            self.out = torch.nn.Linear(6, 2)

        def forward(self, x):
            x = checkpoint(self.l1, x)
            x = checkpoint(self.l1, x)   # the same parameters in a second reentrant backward
            return self.out(x)

    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    with tu.maybe_recording(prefix if record else None):
        tu.init_group(rank, world)
        if case == "unused":
            ddp = DDP(TwoHeads(), find_unused_parameters=True)
            losses = []
            for _ in range(2):
                loss = ddp(x).sum()
                losses.append(loss.item())
                loss.backward()
            with open(f"{prefix}.rank{rank}.result.json", "w") as f:
                json.dump(tu.digest(losses + [x.grad], ddp.module.named_parameters()), f)
        elif case == "unused_unhandled":
            ddp = DDP(TwoHeads())
            ddp(x).sum().backward()
            try:
                ddp(x)   # DDP notices the missing gradients here
                raise AssertionError("DDP should refuse this forward")
            except RuntimeError as e:
                assert "did not receive grad" in str(e), str(e)
        elif case == "rank_dies":
            ddp = DDP(TwoHeads().head_a, device_ids=None)
            ddp(x[:, :6]).sum().backward()
            if rank == 1:
                os._exit(0)   # the rank dies, as if killed, inside its recording
            try:
                ddp(x).sum().backward()   # DDP's collectives find the peer gone
                raise AssertionError("the survivor should see the failure")
            except RuntimeError as e:
                assert "Connection" in str(e) or "gloo" in str(e), str(e)
            return
        else:
            ddp = DDP(Checkpointed(), find_unused_parameters=True)
            try:
                ddp(x).sum().backward()
                raise AssertionError("DDP should report a parameter marked ready twice")
            except RuntimeError as e:
                assert "marked as ready twice" in str(e), str(e)
        del ddp
    dist.destroy_process_group()


def run(case, record=True):
    prefix = os.path.join(tu.OUT, f"ddp_{case}" + ("" if record else "_plain"))
    tu.run_ranks_once(worker, 2, (case, prefix, record), timeout=80)
    return [f"{prefix}.rank{r}.hstrace" for r in range(2)]


def result(trace):
    with open(trace[:-len(".hstrace")] + ".result.json") as f:
        return json.load(f)


def findings(paths, kind):
    code, report = tu.check_json(paths[0])
    tu.expect(code == 1, f"check should report findings: {report}")
    return [f for f in report if f["kind"] == kind]


class DdpReducerTest(unittest.TestCase):
    def test_unused_parameters_found(self):
        paths = run("unused")
        for path in paths:
            ev = tu.events(path)
            unused = [e for e in ev if e["kind"] == "unused_parameter"]
            names = {e.get("text") for e in unused}
            tu.expect(names == {"head_b.weight", "head_b.bias"}, f"unused: {names} {unused[:2]}")
            tu.expect(len(unused) == 4, f"two backwards, two parameters each: {len(unused)}")
        found = findings(paths, "unused_parameter")
        text = " ".join(f["message"] for f in found)
        tu.expect("head_b.weight" in text and "head_b.bias" in text, f"check names them: {text}")
        tu.expect(all(f["severity"] == "warning" for f in found), f"handled: {found}")

    def test_recording_changes_nothing(self):
        # The unused-parameter program recorded and not: the same losses,
        # parameters and input gradient on each rank, bit for bit.
        for r, (plain, recorded) in enumerate(zip(run("unused", record=False), run("unused"))):
            tu.expect_same_result(result(plain), result(recorded), f"ddp unused parameters, rank {r}")

    def test_unused_parameters_without_find_unused(self):
        paths = run("unused_unhandled")
        found = findings(paths, "unused_parameter")
        text = " ".join(f["message"] for f in found)
        tu.expect("head_b.weight" in text and "head_b.bias" in text, f"check names them: {text}")
        tu.expect(all(f["severity"] == "error" for f in found), f"not handled: {found}")

    def test_marked_ready_twice(self):
        paths = run("twice")
        for path in paths:
            ev = tu.events(path)
            twice = [e for e in ev if e["kind"] == "marked_twice"]
            tu.expect(len(twice) == 1 and twice[0].get("text") == "l1.bias", f"marked twice: {twice}")
        found = findings(paths, "marked_twice")
        tu.expect(found and "l1.bias" in found[0]["message"], f"check names it: {found}")

    def test_a_rank_dies(self):
        paths = run("rank_dies")
        failures = [e for e in tu.events(paths[0]) if e["kind"] == "failure"]
        tu.expect(len(failures) == 1 and "RuntimeError" in failures[0].get("text", ""),
                  f"the survivor's trace has the failure: {failures}")
        # The dead rank's trace ends without a footer and is still read.
        code, info = tu.cli("info", *paths)
        tu.expect(code == 0, f"both ranks open together: {info}")


if __name__ == "__main__":
    tu.main()
