"""Module hooks from real PyTorch. PyTorch #25723: a full backward hook
removed after forward still fires in the backward that follows (the hook
list was captured at forward, Note [Module hooks in traces]); the trace must
show the fire after the removal (test_check_stale_fire.py: `check` reports it).
PyTorch #58354/#61250: a hook that removes itself while it runs."""

import os
import unittest

import torch_util as tu


def record_25723(out):
    """The program of #25723, recorded to `out` (None: not recorded). Returns
    the hook's fires and what it computed (torch_util.digest)."""
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    fired = []
    with tu.maybe_recording(out):
        handle = model[2].register_full_backward_hook(lambda m, gi, go: fired.append("full"))
        x = torch.randn(3, 4, requires_grad=True)
        y = model(x)
        handle.remove()          # removed after forward...
        y.sum().backward()       # ...and it still runs here (PyTorch 1.13 and 2.x)
        y2 = model(torch.randn(3, 4))
        y2.sum().backward()      # not any more
    return fired, tu.digest([y.sum(), y2.sum(), x.grad], model.named_parameters())


class ModuleHooksTest(unittest.TestCase):
    def test_25723_fire_after_removal_in_trace(self):
        out = os.path.join(tu.OUT, "issue25723.hstrace")
        fired, _ = record_25723(out)
        tu.expect(fired == ["full"], f"PyTorch ran the removed hook once: {fired}")
        ev = tu.events(out)
        adds = [e for e in ev if e["kind"] == "hook_add" and e.get("hook_kind") == "module_backward"]
        tu.expect(len(adds) == 1 and adds[0].get("owner_label") == "2", f"owned by module '2': {adds}")
        key = adds[0]["key"]
        removes = [e for e in ev if e["kind"] == "hook_remove" and e.get("key") == key]
        fires = [e for e in ev if e["kind"] == "hook_fire" and e.get("key") == key]
        tu.expect(len(removes) == 1 and len(fires) == 1, f"one remove, one fire: {removes} {fires}")
        tu.expect(removes[0]["index"] < fires[0]["index"], "the fire comes after the removal")
        tu.expect(removes[0].get("node", 0) == 0 and adds[0].get("node", 0) == 0, "module hook: node 0")
        tu.expect(fires[0].get("function", "").startswith("BackwardHookFunctionBackward"),
                  f"the fire names the BackwardHookFunction Node: {fires[0]}")

    def test_hook_that_removes_itself(self):
        import torch
        import hookscope
        out = os.path.join(tu.OUT, "self_removing.hstrace")
        a = torch.ones(3, requires_grad=True)
        calls = []
        with hookscope.recording(out):
            def once(grad):
                calls.append(1)
                handle.remove()
            b = a * 2
            handle = b.register_hook(once)
            b.sum().backward(retain_graph=True)
            b.sum().backward()
        tu.expect(calls == [1], f"ran once: {calls}")
        ev = tu.events(out)
        seq = [e["kind"] for e in ev if e.get("key") and e["kind"].startswith("hook_")]
        tu.expect(seq == ["hook_add", "hook_fire", "hook_remove"], f"add, fire, remove: {seq}")
        code, report = tu.check_json(out)
        tu.expect(code == 0, f"a hook removing itself is clean: {report}")

    def test_recording_changes_nothing(self):
        plain_fired, plain = record_25723(None)
        fired, recorded = record_25723(os.path.join(tu.OUT, "issue25723.same.hstrace"))
        tu.expect(plain_fired == fired == ["full"], f"the same fires: {plain_fired} {fired}")
        tu.expect_same_result(plain, recorded, "the #25723 program")


if __name__ == "__main__":
    tu.main()
