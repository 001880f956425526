"""Hooks on no single module or tensor, recorded under their own kinds, one
fire per true call, as hookscope's runtime writes them: the global module
hooks (torch.nn.modules.module.register_module_*_hook: all four, owner
"global module hooks"; full backward pre hooks on 2.x only) and
torch.autograd.graph.register_multi_grad_hook (2.x: one owner
"multi_grad_hook (all)"/"(any)" with a tensor hook per tensor, one fire per
call of the user's function). Each program counts the calls itself; the
trace must have as many fires. Recording never changes what the program
computes (loss and parameters bit for bit). Runs under 1.13 (label torch)
and 2.6 (torch2)."""

import os
import unittest

import torch_util as tu


def _counter(calls, name):
    def hook(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
    return hook


def global_hooks_program(out):
    """A 3-layer model trained 3 steps with the four global module hooks,
    removed before a 4th step. Returns (calls, digest)."""
    import torch
    import torch.nn.modules.module as mm
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    calls, losses = {}, []
    with tu.maybe_recording(out):
        handles = [mm.register_module_forward_pre_hook(_counter(calls, "module_forward_pre")),
                   mm.register_module_forward_hook(_counter(calls, "module_forward")),
                   mm.register_module_full_backward_hook(_counter(calls, "module_backward"))]
        if hasattr(mm, "register_module_full_backward_pre_hook"):   # 2.x
            handles.append(mm.register_module_full_backward_pre_hook(
                _counter(calls, "module_backward_pre")))
        for step in range(4):
            if step == 3:
                for h in handles:
                    h.remove()
            loss = model(torch.randn(3, 4, requires_grad=True)).pow(2).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss)
    return calls, tu.digest(losses, model.named_parameters())


def multi_grad_program(out, mode):
    """register_multi_grad_hook over a and b (mode all or any), 3 backwards
    (the third reaches only a), removed before a 4th. Returns (calls, digest)."""
    import torch
    import torch.autograd.graph as graph   # a name bound before the recording starts is not patched
    torch.manual_seed(0)
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    calls, losses = {}, []
    with tu.maybe_recording(out):
        handle = graph.register_multi_grad_hook((a, b), _counter(calls, mode), mode=mode)
        for step in range(4):
            if step == 3:
                handle.remove()
            loss = (a * 2).sum() if step == 2 else (a * b).sum()
            loss.backward()
            losses.append(loss)
    return calls, tu.digest(losses, [("a", a), ("b", b), ("a.grad", a.grad), ("b.grad", b.grad)])


def of(ev, what, kind=None, owner=None):
    return [e for e in ev if e["kind"] == what and (kind is None or e.get("hook_kind") == kind)
            and (owner is None or e.get("owner_label") == owner)]


class GlobalModuleHooks(unittest.TestCase):
    def test_one_fire_per_call_owned_by_global_module_hooks(self):
        import torch.nn.modules.module as mm
        out = os.path.join(tu.OUT, "global_module_hooks.hstrace")
        calls, _ = global_hooks_program(out)
        kinds = ["module_forward_pre", "module_forward", "module_backward"]
        if hasattr(mm, "register_module_full_backward_pre_hook"):
            kinds.append("module_backward_pre")
        # 4 modules (the Sequential and its 3) a step, 3 steps.
        self.assertEqual(calls, {k: 12 for k in kinds})
        ev = tu.events(out)
        for k in kinds:
            adds = of(ev, "hook_add", k)
            self.assertEqual(len(adds), 1, f"{k}: {adds}")
            self.assertEqual(adds[0].get("owner_label"), "global module hooks", adds[0])
            self.assertEqual(len(of(ev, "hook_fire", k, "global module hooks")), calls[k], k)
            self.assertEqual(len(of(ev, "hook_remove", k, "global module hooks")), 1, k)
        # A backward one's fire names the BackwardHookFunction Node it ran
        # through (Note [Module hooks in traces]); a forward one's names none.
        for e in of(ev, "hook_fire", "module_backward") + of(ev, "hook_fire", "module_backward_pre"):
            self.assertTrue(e.get("function", "").startswith("BackwardHookFunctionBackward"), e)
        for e in of(ev, "hook_fire", "module_forward"):
            self.assertEqual(e.get("node", 0), 0, e)

    def test_recording_changes_nothing(self):
        plain = global_hooks_program(None)
        recorded = global_hooks_program(os.path.join(tu.OUT, "global_module_hooks_same.hstrace"))
        self.assertEqual(plain, recorded)


class MultiGradHook(unittest.TestCase):
    def setUp(self):
        import torch.autograd.graph as graph
        if not hasattr(graph, "register_multi_grad_hook"):
            import torch
            self.skipTest(f"PyTorch {torch.__version__} has no register_multi_grad_hook (2.x)")

    def check(self, mode, want_calls):
        out = os.path.join(tu.OUT, f"multi_grad_{mode}.hstrace")
        calls, _ = multi_grad_program(out, mode)
        self.assertEqual(calls, {mode: want_calls})
        ev = tu.events(out)
        owner = f"multi_grad_hook ({mode})"
        owners = [e for e in ev if e["kind"] == "owner_created" and e.get("owner_label") == owner]
        self.assertEqual(len(owners), 1, owners)
        # One hook over 2 tensors: a tensor hook on each, of one owner ...
        self.assertEqual(len(of(ev, "hook_add", "tensor_pre", owner)), 2)
        self.assertEqual(len(of(ev, "hook_add", "tensor_pre")), 2, "no other tensor hook")
        # ... that fires once per call of the user's function, on AccumulateGrad.
        fires = of(ev, "hook_fire", "tensor_pre")
        self.assertEqual(len(fires), want_calls, fires)
        self.assertTrue(all(e.get("owner_label") == owner for e in fires), fires)
        self.assertTrue(all(e.get("function", "").startswith("AccumulateGrad") for e in fires), fires)
        self.assertEqual(len(of(ev, "hook_remove", "tensor_pre", owner)), 2)

    def test_all_one_fire_per_call(self):
        self.check("all", 3)

    def test_any_one_fire_per_call(self):
        self.check("any", 3)

    def test_recording_changes_nothing(self):
        for mode in ("all", "any"):
            plain = multi_grad_program(None, mode)
            recorded = multi_grad_program(os.path.join(tu.OUT, f"multi_grad_{mode}_same.hstrace"), mode)
            self.assertEqual(plain, recorded, mode)


if __name__ == "__main__":
    tu.main()
