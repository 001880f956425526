"""Hook kinds PyTorch 2.x added, recorded under their own kinds, one fire per
true call: Tensor.register_post_accumulate_grad_hook (post_accumulate, on
the leaf's AccumulateGrad, after its tensor hooks) and
Module.register_full_backward_pre_hook (module_backward_pre, fired on the
outputs' BackwardHookFunction Node, before the module's full backward
hook). Skipped (exit 77) on a PyTorch without them (1.13: ctest -L torch2
runs it under 2.6)."""

import os
import unittest

import torch_util as tu


def counter(calls, name):
    def hook(*args):
        calls[name] = calls.get(name, 0) + 1
    return hook


def setUpModule():
    import torch
    if not hasattr(torch.Tensor, "register_post_accumulate_grad_hook"):
        raise unittest.SkipTest(f"PyTorch {torch.__version__} has no post-accumulate-grad or full backward "
                                "pre hooks (2.x kinds; ctest -L torch2 runs this under 2.6)")


class Hooks2xTest(unittest.TestCase):
    def test_post_accumulate_grad_hooks(self):
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "post_accumulate.hstrace")
        w = torch.ones(3, requires_grad=True)
        b = torch.zeros(3, requires_grad=True)
        calls, order = {}, []
        with hookscope.recording(out):
            hw = w.register_post_accumulate_grad_hook(counter(calls, "w"))
            b.register_post_accumulate_grad_hook(counter(calls, "b"))
            w.register_hook(lambda g: order.append("tensor"))
            w.register_post_accumulate_grad_hook(lambda t: order.append("post_accumulate"))
            for step in range(3):
                (w * 2 + b).sum().backward()
                if step == 0:
                    hw.remove()
            try:   # PyTorch's own error for a non-leaf, recorded as nothing
                (w * 2).register_post_accumulate_grad_hook(lambda t: None)
                raise AssertionError("PyTorch should refuse a non-leaf")
            except RuntimeError as e:
                tu.expect("non-leaf" in str(e), str(e))
        tu.expect(calls == {"w": 1, "b": 3}, f"PyTorch's calls: {calls}")
        tu.expect(order == ["tensor", "post_accumulate"] * 3, f"PyTorch's order: {order}")
        ev = tu.events(out)

        def of(what):
            return [e for e in ev if e["kind"] == what and e.get("hook_kind") == "post_accumulate"]
        tu.expect(len(of("hook_add")) == 3, f"three post-accumulate hooks added: {of('hook_add')}")
        tu.expect(len(of("hook_fire")) == calls["w"] + calls["b"] + 3,
                  f"one fire per call: {len(of('hook_fire'))} vs {calls} + 3")
        tu.expect(len(of("hook_remove")) == 1, f"one removed: {of('hook_remove')}")
        tu.expect(all(e.get("function", "").startswith("AccumulateGrad") for e in of("hook_fire")),
                  f"fired on AccumulateGrad: {of('hook_fire')[:2]}")
        # w's AccumulateGrad (a new one each backward): its tensor hook fires
        # first, then its post-accumulate hooks (2 in the first backward, then 1).
        tensor = [e for e in ev if e["kind"] == "hook_fire" and e.get("hook_kind") == "tensor_pre"]
        tu.expect(len(tensor) == 3, f"w's tensor hook fired once a backward: {tensor}")
        after = [[p for p in of("hook_fire") if p["node"] == t["node"]] for t in tensor]
        tu.expect([len(a) for a in after] == [2, 1, 1], f"w's post-accumulate fires: {after}")
        tu.expect(all(p["index"] > t["index"] for t, a in zip(tensor, after) for p in a),
                  "the post-accumulate hooks fire after the tensor hook")

    def test_full_backward_pre_hooks(self):
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "backward_pre.hstrace")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        calls, order = {}, []
        with hookscope.recording(out):
            model[2].register_full_backward_pre_hook(counter(calls, "pre"))
            model[2].register_full_backward_pre_hook(lambda m, go: order.append("pre"))
            model[2].register_full_backward_hook(lambda m, gi, go: order.append("full"))
            for _ in range(3):
                model(torch.randn(3, 4, requires_grad=True)).sum().backward()
        tu.expect(calls == {"pre": 3} and order == ["pre", "full"] * 3, f"PyTorch: {calls} {order}")
        ev = tu.events(out)

        def of(what, kind="module_backward_pre"):
            return [e for e in ev if e["kind"] == what and e.get("hook_kind") == kind]
        adds = of("hook_add")
        tu.expect(len(adds) == 2 and all(e.get("owner_label") == "2" for e in adds),
                  f"two pre hooks owned by module '2': {adds}")
        fires = of("hook_fire")
        tu.expect(len(fires) == 2 * 3, f"one fire per call: {len(fires)}")
        tu.expect(all(e.get("function", "").startswith("BackwardHookFunctionBackward") for e in fires),
                  f"the fire names the outputs' BackwardHookFunction Node: {fires[:2]}")
        full = of("hook_fire", "module_backward")
        tu.expect(len(full) == 3 and all(f["index"] < g["index"] for f, g in zip(fires[1::2], full)),
                  "each backward: the pre hooks' fires, then the full backward hook's")


if __name__ == "__main__":
    tu.main()
